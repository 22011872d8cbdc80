"""The compiler cache: every C, C++ and HIP compile of a build goes through ccache, without the project
doing anything, and the build says how often it hit.

A job's cache is a named Docker volume mounted at :data:`CONTAINER_DIR` (``cibw.ccache_volume``: one
per builder image, ROCm release, arch list and sysroot, shared by the jobs of a matrix that differ in
their Python only; ``--no-cache`` mounts none and routes only HIP compiles, through the launcher
below). Projects call their compilers in three ways, and each is routed (:func:`environment`):

* **by name through PATH** (setuptools runs ``x86_64-linux-gnu-gcc``/``gcc``/``g++`` from sysconfig,
  autotools and meson find ``cc``/``c++``): the image's *masquerade directory* of compiler-named links
  to ccache is put first on ``PATH`` (``PATH=<dir>:$PATH``, the one value of the build environment
  rendered with an expansion: cibuildwheel has put the job's Python first on it). ccache then runs the
  next compiler of that name on PATH: the gcc-toolset's on manylinux, ``/usr/bin``'s on Debian;
* **hipcc by full path** (``/usr/bin/hipcc``, ``$ROCM_PATH/bin/hipcc``): PATH cannot catch it, so
  hipcc's own hook runs its clang through the HIP launcher (:data:`HIP_LAUNCHER`, below), which runs
  ccache: Debian's hipcc (the Perl driver) honours ``HIP_CLANG_LAUNCHER`` from 5.7 (trixie;
  bookworm's 5.2 has no such hook, so HIP compiles there are not cached); AMD's compiled hipcc does
  not, but runs ``$HIP_CLANG_PATH/clang++``, which on the manylinux image is a directory of wrappers
  (:data:`HIP_CLANG_WRAPPERS`, made by its Dockerfile) that ``exec "$BUILDKIT_HIP_LAUNCHER"
  /opt/rocm/llvm/bin/clang++`` (:data:`LAUNCHER_VARIABLE`; ``ccache`` when unset, outside a build).
  Debian's hipcc from 7.0 (sid's 7.0.2, experimental's 7.2.4: the compiled one) ignores
  ``HIP_CLANG_LAUNCHER`` too: on ``debian-sid-rocm`` the build's first hook makes the same wrappers
  (:data:`SID_HIP_WRAPPERS`, :data:`SID_SETUP`) over the clang hipcc names as its ``InstalledDir``
  (``/usr/lib/llvm-22/bin``), exec'ing the launcher. ccache 4 caches clang's HIP compiles (``-x hip
  --offload-arch=...``, device code and offload bundle included), hashing the compiler by content
  (``CCACHE_COMPILERCHECK=content``: another clang in a rebuilt image misses);
* **CMake** (which finds ``$ROCM_PATH/llvm/bin/clang++`` for HIP by full path):
  ``CMAKE_{C,CXX,HIP}_COMPILER_LAUNCHER`` the launcher below (read from the environment since CMake
  3.17, by try_compile's projects too), which runs ccache. A compile both launched and masqueraded
  is counted and cached once (ccache skips its own links). A **configure probe** (a source in
  CMake's ``CMakeFiles/CMakeScratch/TryCompile-XXXXXX/``, named anew at every configure:
  ``check_c_source_compiles``, FindThreads, ``check_function_exists``) is not cached: the launcher
  runs it with ``CCACHE_DISABLE=1``, which the masquerade honours too. Its random path made it a
  miss in every rebuild (5 of pywhispercpp's 173 compiles), as ccache leaves autoconf's
  ``conftest.c`` out for the same reason; CMake's compiler-identification compiles read their
  source from CMake's modules, a fixed path, and stay cached.

**The HIP launcher: one translation-unit ID, cached or not.** clang names each HIP translation unit
(``__hip_cuid_<hex>`` in host and device code; with -fgpu-rdc it keeps static device names apart
across objects); without a ``-cuid=`` it
hashes the command line it runs (``-fuse-cuid=hash``), and ccache runs clang with the arguments in
its own order (and ``-fcolor-diagnostics``), so an object compiled through ccache differed from an
uncached compile's, and ``buildkit verify`` (an uncached rebuild) from the cached build, for every
project not passing ``-cuid`` itself (CMake's HIP language in whisper.cpp's ggml, hipcc-driven
setup.py files; csrc's and refops' builds pass one). So every HIP compile of a build whose layout
routes them (:func:`uses_launcher`) goes through ``hip_launcher.sh`` (beside this module, staged at
:data:`STAGED_LAUNCHER` with the source, :func:`launcher_script`), **with or without the cache**:
``hip-launcher COMPILER ARG...`` gives a HIP compile (``-c`` of a ``-x hip`` or ``.hip`` input)
lacking ``-cuid=``/``-fuse-cuid=`` a ``-cuid=`` of 16 hex, the sha256 of its arguments as the
project gave them, before ccache sees them, leaving out what ccache leaves out of its hash: the
compiler's path, the output files (``-o``/``-MF``/``-MT``/``-MQ``: CMake's try_compile names them
at random) and the include folders (``-I``, ``-isystem``, ``-iquote``, ``-idirafter``: the
preprocessor mode hashes the text instead, which is how the jobs of a matrix, differing in
``-I/usr/include/python3.X``, share device code; a frontend's random environment is an include
folder too). It then runs ``ccache COMPILER ...`` (:data:`CCACHE_SWITCH` set: a build with the
cache) or the compiler. The same file compiled with other flags (``-D``, ``-O``, archs) stays
another translation unit, as with clang's hash; two compiles ccache would serve one object get one
ID. What is hashed names no random path: the tree is at ``/project``, so the ID is the same in every
build (tests/docker/test_hip_cuid_e2e.py: a CMake HIP and a hipcc compile, cold, cached and
``--no-cache``, one wheel sha256).

No ``CCACHE_BASEDIR``: the tree is always at ``/project``, so hits need no path rewriting, and the
rewriting changes what the compiler sees (``__FILE__`` and debug info become relative), so a cached
build would differ from an uncached one (``buildkit verify`` rebuilds without the cache).

**Device code once per matrix.** The jobs that differ in their Python only share the volume, and a
HIP translation unit that includes nothing of Python's is hit by jobs 2..N: their compile lines
differ in ``-I/usr/include/python3.X`` only, which misses in direct mode (the command line is
hashed) and hits in preprocessor mode, whose hash leaves out the options that only change the
preprocessed text (``-I``, ``-D``) and takes that text instead: the same for every Python when no
Python header is included. The Python include folders are deliberately *not* in
:data:`IGNORED_OPTIONS`: the builder images carry the headers of every Python they serve side by
side, so a direct-mode manifest naming ``/usr/include/python3.13/Python.h`` still matches in the
3.14 job (the file is there, unchanged) and would hand the 3.14 job the 3.13 object (seen with
ccache 4.14 on debian-sid-rocm: ``module.c`` built for 3.14 came out byte-identical to 3.13's).

**The isolated build environment at a fixed path.** A build frontend makes the build's environment
at a random path (``/tmp/build-env-*`` of pypa/build, ``/tmp/pip-build-env-*`` of pip, uv's
``builds-v0/.tmp*``), and every compile that includes its headers names it: torch's
``cpp_extension`` passes ``-I<env>/.../torch/include``, the preprocessed text and ccache's manifest
name each header under it, and the objects carry it (``__FILE__`` of the headers' inline
``TORCH_CHECK``s, pybind11's lambdas' names in RTTI: 38 times in a two-file torch extension). So no
such compile could hit, and no two builds of a torch extension were the same bytes. pypa/build (>=
1.5, ``--env-dir``) makes it at :data:`BUILD_ENV_DIR` instead, in every build with or without the
cache: the images whose ``build`` takes that (:attr:`Layout.fixed_build_env`: the Debian builders
pin 1.6.1) get ``CIBW_BUILD_FRONTEND="build; args: --env-dir ..."`` (``cibw.build_frontend``; also
``build[uv]``). The environment is still isolated and made from the same locked wheelhouse, so the
build stays hermetic and its wheel reproducible; a no-change rebuild of a torch extension hits every
compile (tests/docker/test_torch_cache_e2e.py). Where the frontend cannot (pip, uv, an image with an
older ``build``), :data:`IGNORED_OPTIONS` leaves the random ``-I`` out of the direct-mode hash: a
compile that only names the empty ``<env>/include`` still hits, one that reads a header from the
environment misses (the manifest names the header at a path gone since).

The layout is the one the image's profile declares (``cache_layout`` and ``cache_hip`` in
docker/profiles.toml: :data:`NAMED`); an image of the project's own Dockerfile or a ref gets
:data:`ANY`: both usual masquerade directories on PATH (a missing one is skipped), and no hipcc or
CMake variable naming ccache, which that image may not have (nor the launcher: its HIP compiles
are not cached, so cached and uncached ones do not differ).

The hit rate: the build's first hook zeroes the statistics in the volume (:data:`ZERO_STATS`), and
after cibuildwheel :func:`read_stats` reads them in a throwaway container holding the volume
(``ccache --print-stats``; ccache 3's ``-s`` table where that is missing) for the summary and the
manifest (``compiler_cache``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any

from buildkit.docker_engine import throwaway
from buildkit.errors import UsageError
from buildkit.plan.models import Job
from buildkit.records import Key, json_shape

#: where the job's cache volume is mounted in the build container
CONTAINER_DIR = "/ccache"
#: what every masquerade ends with: the PATH cibuildwheel gave the build (the job's Python first)
PATH_TAIL = ":$PATH"
#: the HIP compile launcher (this folder's ``hip_launcher.sh``, :func:`launcher_script`), staged with
#: the source of every build whose layout routes HIP compiles (:func:`uses_launcher`), with or without
#: the cache: ``hip-launcher COMPILER ARG...`` adds the ``-cuid=`` a HIP compile lacks, then runs
#: ccache (with :data:`CCACHE_SWITCH` set) or the compiler
STAGED_LAUNCHER = ".buildkit/hip-launcher"
#: the launcher in the build container (cibuildwheel copies the staged source to /project)
HIP_LAUNCHER = "/project/" + STAGED_LAUNCHER
#: set (``1``) in a build with the cache: the launcher runs the compile through ccache
CCACHE_SWITCH = "BUILDKIT_HIP_CCACHE"
#: the variable the manylinux image's wrappers exec (``${BUILDKIT_HIP_LAUNCHER:-ccache}``)
LAUNCHER_VARIABLE = "BUILDKIT_HIP_LAUNCHER"
#: the wrappers of ROCm's clang that the manylinux image's Dockerfile makes for AMD's hipcc
HIP_CLANG_WRAPPERS = "/opt/rocm-buildkit/hip-ccache"
#: the same wrappers, made in the build container by :data:`SID_SETUP` (debian-sid-rocm's hipcc)
SID_HIP_WRAPPERS = "/tmp/buildkit-hip-ccache"
#: a POSIX shell command run first in the build (before_build), with or without the cache: the
#: wrappers of the clang Debian's compiled hipcc runs (its ``InstalledDir``): ``clang``/``clang++``
#: exec the launcher on the real one, every other tool of that folder is linked; no brace
#: (cibuildwheel formats hook commands)
SID_SETUP = (
    f"( d={SID_HIP_WRAPPERS}; "
    "real=$(env -u HIP_CLANG_PATH hipcc --version 2>/dev/null | sed -n 's/^InstalledDir: //p' | head -n 1); "
    'if [ -n "$real" ]; then mkdir -p "$d" && ln -sf "$real"/* "$d"/ && '
    'for c in clang clang++; do rm -f "$d/$c"; '
    f"""printf '#!/bin/sh\nexec {HIP_LAUNCHER} %s/%s "$@"\n' "$real" "$c" > "$d/$c" && chmod +x "$d/$c"; """
    "done; fi )"
)
#: the wrappers of the host compilers every build that stages the launcher makes (its host ISA, with
#: or without the recipe's ``host_isa``, issue 38): first on PATH, each execs the launcher on the
#: compiler PATH had there (the ccache masquerade left out when the launcher runs ccache itself), so
#: that every host compile of the build (setuptools' ``gcc``, a Makefile's ``cc``), not only HIP's
#: and CMake's, is held to it
HOST_CC_WRAPPERS = "/tmp/buildkit-host-cc"
_HOST_COMPILERS = (
    "cc",
    "gcc",
    "c++",
    "g++",
    "x86_64-linux-gnu-gcc",
    "x86_64-linux-gnu-g++",
    "clang",
    "clang++",
)
#: a POSIX shell command of the before_build hook that makes them (no brace: cibuildwheel formats it)
HOST_CC_SETUP = (
    f'( d={HOST_CC_WRAPPERS}; mkdir -p "$d" && '
    'if [ -n "$BUILDKIT_HIP_CCACHE" ]; then '
    'p=$(printf %s "$PATH" | tr : \'\\n\' | grep -v -x -e "$d" -e /usr/lib/ccache -e /usr/lib64/ccache '
    "| paste -sd: -); "
    'else p=$(printf %s "$PATH" | tr : \'\\n\' | grep -v -x -e "$d" | paste -sd: -); fi; '
    # and every versioned one on that PATH (gcc-14, clang++-19, x86_64-linux-gnu-gcc-14)
    'v=$(printf %s "$p" | tr : \'\\n\' | while read -r dir; do ls "$dir" 2>/dev/null; done '
    "| grep -E -x '(x86_64-linux-gnu-)?(gcc|g\\+\\+|clang|clang\\+\\+)-[0-9][0-9.]*' | sort -u); "
    f'for c in {" ".join(_HOST_COMPILERS)} $v; do real=$(PATH=$p; command -v "$c"); '
    'if [ -n "$real" ]; then '
    f"""printf '#!/bin/sh\\nexec {HIP_LAUNCHER} %s "$@"\\n' "$real" > "$d/$c" && chmod +x "$d/$c"; """
    "fi; done )"
)
#: CMake (>= 3.17) takes these from the environment as the default of <LANG>_COMPILER_LAUNCHER
CMAKE_LAUNCHERS = ("CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_HIP_COMPILER_LAUNCHER")
#: the routing variables a recipe may set itself: its own routing wins, ours is left out
RECIPE_OVERRIDABLE = frozenset({*CMAKE_LAUNCHERS, "HIP_CLANG_LAUNCHER", "HIP_CLANG_PATH"})
#: where pypa/build makes the isolated build environment of a job (``--env-dir``): the same path in
#: every build, so the compile lines, the headers ccache records and the objects (``__FILE__`` of the
#: headers' inline functions, lambdas' names in RTTI, debug info) never name a random one
BUILD_ENV_DIR = "/tmp/buildkit-build-env"
#: ``-I`` options naming the build frontends' isolated environments (random paths), kept out of ccache's
#: direct-mode hash (``CCACHE_IGNOREOPTIONS``; a trailing ``*`` matches any rest)
IGNORED_OPTIONS = ("-I/tmp/build-env-*", "-I/tmp/pip-build-env-*", "-I/root/.cache/uv/builds-v0/*")
#: the first command of the build's ``before_build`` hook: this build's statistics start at zero
ZERO_STATS = "if command -v ccache >/dev/null 2>&1; then ccache --zero-stats >/dev/null; fi"
_STATS_TIMEOUT = 120


@dataclass(frozen=True)
class Layout:
    """Where an image's ccache masquerades as its compilers, and how its hipcc is routed."""

    name: str
    #: directories of compiler-named links to ccache, put first on PATH (a missing one is skipped)
    masquerade: tuple[str, ...]
    #: the variables that make the image's hipcc run its clang through the launcher
    #: (:data:`HIP_LAUNCHER`), with or without the cache
    hip: Mapping[str, str]
    #: the image has ccache on PATH for sure: CMake's C and C++ launchers may name it (its HIP
    #: launcher is :data:`HIP_LAUNCHER`, which runs ccache)
    launchers: bool
    #: a shell command the build runs first (before_build) to make what ``hip`` names; None: nothing
    setup: str | None = None
    #: the image's pypa/build takes ``--env-dir`` (>= 1.5): its isolated build environment is made
    #: at :data:`BUILD_ENV_DIR` rather than a random ``/tmp/build-env-*`` (``cibw.build_frontend``).
    #: The Debian builders' Python tools are docker/debian-rocm.python.txt (build 1.6.1): a builder
    #: declaring a Debian layout installs them too
    fixed_build_env: bool = False


#: Debian's ccache package links gcc, g++, cc, c++, x86_64-linux-gnu-* and clang(++)-17 (bookworm:
#: -15) in /usr/lib/ccache (the Dockerfiles run update-ccache-symlinks after installing every compiler)
DEBIAN = Layout(
    "debian",
    ("/usr/lib/ccache",),
    MappingProxyType({"HIP_CLANG_LAUNCHER": HIP_LAUNCHER}),
    launchers=True,
    fixed_build_env=True,
)
#: Debian sid's current ROCm (6.4 and 7.2): the compiled hipcc, routed like AMD's through wrappers
#: of its clang, which the build's first hook makes (:data:`SID_SETUP`)
DEBIAN_SID = Layout(
    "debian-sid",
    ("/usr/lib/ccache",),
    MappingProxyType({"HIP_CLANG_PATH": SID_HIP_WRAPPERS}),
    launchers=True,
    setup=SID_SETUP,
    fixed_build_env=True,
)
#: EPEL's ccache on EL: /usr/lib64/ccache (gcc, g++, cc, c++: the gcc-toolset's by name); AMD's hipcc
#: through the image's clang wrappers, which exec :data:`LAUNCHER_VARIABLE`
EL = Layout(
    "el",
    ("/usr/lib64/ccache",),
    MappingProxyType({"HIP_CLANG_PATH": HIP_CLANG_WRAPPERS, LAUNCHER_VARIABLE: HIP_LAUNCHER}),
    launchers=True,
)
#: an image buildkit did not make: whichever masquerade directory it has
ANY = Layout("any", ("/usr/lib/ccache", "/usr/lib64/ccache"), MappingProxyType({}), launchers=False)
#: the layout of each (``cache_layout``, route to hipcc's clang) a profile may declare
#: (:data:`buildkit.profiles.CACHE_LAYOUTS`, ``cache_layout`` and ``cache_hip`` of docker/profiles.toml);
#: an image extended with packages keeps its profile's
NAMED: Mapping[tuple[str, str], Layout] = MappingProxyType(
    {
        ("debian", "launcher"): DEBIAN,
        ("debian", "build-wrappers"): DEBIAN_SID,
        ("el", "image-wrappers"): EL,
    }
)


def layout(job: Job) -> Layout:
    """The compiler-cache layout of the job's builder image: its profile's ``cache_layout`` and
    ``cache_hip``; :data:`ANY` for an image that is not a profile's, or a profile that declares none."""
    try:
        profile = job.image.profile_data
    except UsageError:
        profile = None
    if profile is None or profile.cache_layout is None:
        return ANY
    return NAMED.get((profile.cache_layout, profile.cache_route or ""), ANY)


def setup_commands(job: Job, *, cached: bool = True) -> tuple[str, ...]:
    """What the build's ``before_build`` hook runs first: :data:`ZERO_STATS` with the cache, then the
    layout's ``setup`` in every build (unless the job's env routes hipcc itself), then the host
    compilers' wrappers whenever the layout stages the launcher (:data:`HOST_CC_WRAPPERS`)."""
    chosen = layout(job)
    zero = (ZERO_STATS,) if cached else ()
    host = (HOST_CC_SETUP,) if uses_launcher(job) else ()
    if chosen.setup is None or set(chosen.hip) & set(job.env):
        return (*zero, *host)
    return (*zero, chosen.setup, *host)


def uses_launcher(job: Job) -> bool:
    """The job's layout routes HIP compiles through :data:`HIP_LAUNCHER`: the build stages it
    (:func:`launcher_script`) at :data:`STAGED_LAUNCHER`, with or without the cache."""
    chosen = layout(job)
    return bool(chosen.hip) or chosen.launchers


def launcher_script() -> str:
    """The launcher as staged: ``hip_launcher.sh``, beside this module."""
    return resources.files("buildkit.building").joinpath("hip_launcher.sh").read_text(encoding="utf-8")


def environment(job: Job, *, cached: bool = True) -> dict[str, str]:
    """The build environment that sends the job's compiles through the cache in :data:`CONTAINER_DIR`
    (``cached``), or, without the cache, its HIP compiles through the launcher alone.

    ``PATH`` ends with :data:`PATH_TAIL` (rendered as an expansion, see ``cibw.render_environment``);
    a routing variable the job's env sets itself (:data:`RECIPE_OVERRIDABLE`) is left to it."""
    chosen = layout(job)
    env: dict[str, str] = {}
    if cached:
        env = {
            "CCACHE_DIR": CONTAINER_DIR,
            # compare the compiler by content, so an image rebuilt with another clang or gcc misses
            "CCACHE_COMPILERCHECK": "content",
            # the build directory is always /project: its name need not be hashed with -g
            "CCACHE_NOHASHDIR": "1",
            # the isolated build environment's random include folder: not a reason to miss
            "CCACHE_IGNOREOPTIONS": " ".join(IGNORED_OPTIONS),
        }
        if uses_launcher(job):
            env[CCACHE_SWITCH] = "1"
    routes = dict(chosen.hip)
    if chosen.launchers:
        # C and C++ through the launcher too: with the cache it runs ccache, but not for a configure
        # probe in CMake's random scratch folder, which could never hit; with or without the cache, it
        # holds the host ISA of a compiler CMake names by path (a sysroot's toolchain file)
        routes.update(dict.fromkeys(CMAKE_LAUNCHERS, HIP_LAUNCHER))
    env.update({key: value for key, value in routes.items() if key not in job.env})
    if cached:
        env["PATH"] = ":".join(chosen.masquerade) + PATH_TAIL
    return env


@json_shape("hits", "misses", Key("hit_rate", convert=lambda rate: round(rate, 4)))
@dataclass(frozen=True)
class CacheStats:
    """The compiles of one build as ccache counted them."""

    hits: int  # served from the cache (direct or preprocessed mode)
    misses: int  # compiled and stored
    #: the input file of each compile that missed, as the compiler was given it (from the build's own
    #: log, :func:`stats_log`; empty without one): which compiles a rebuild could not take from the
    #: cache, written to the job's log; not part of the manifest's ``compiler_cache``
    missed: tuple[str, ...] = field(default=(), compare=False)

    @property
    def hit_rate(self) -> float | None:
        """hits / (hits + misses); None when no compile was cacheable."""
        total = self.hits + self.misses
        return self.hits / total if total else None

    def describe(self) -> str:
        """``41 hits, 1 miss (97.6% hit rate)``; ``no compile went through ccache`` when none did."""
        rate = self.hit_rate
        if rate is None:
            return "no compile went through ccache"
        hits = f"{self.hits} hit{'s' * (self.hits != 1)}"
        misses = f"{self.misses} miss{'es' * (self.misses != 1)}"
        return f"{hits}, {misses} ({rate:.1%} hit rate)"


#: ccache 4's ``--print-stats``: one ``<counter>\t<value>`` line per counter
_HITS_4 = ("direct_cache_hit", "preprocessed_cache_hit")
_MISS_4 = "cache_miss"
#: ccache 3's ``-s`` table: ``cache hit (direct)      12``
_LINE_3 = re.compile(r"^(cache hit \(direct\)|cache hit \(preprocessed\)|cache miss)\s+(\d+)\s*$")


def parse_stats(text: str) -> CacheStats | None:
    """The hits and misses of ``ccache --print-stats`` (ccache 4) or ``ccache -s`` (ccache 3);
    None when the text holds neither."""
    counters: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if sep and value.strip().isdigit():
            counters[key.strip()] = int(value)
    if _MISS_4 in counters:
        missed = tuple(line[len(_MISSED) :] for line in text.splitlines() if line.startswith(_MISSED))
        return CacheStats(
            hits=sum(counters.get(k, 0) for k in _HITS_4), misses=counters[_MISS_4], missed=missed
        )
    table: dict[str, int] = {}
    for line in text.splitlines():
        match = _LINE_3.match(line.strip())
        if match:
            table[match.group(1)] = int(match.group(2))
    if "cache miss" not in table:
        return None
    hits = table.get("cache hit (direct)", 0) + table.get("cache hit (preprocessed)", 0)
    return CacheStats(hits=hits, misses=table["cache miss"])


#: run in the throwaway container: exit 3 without ccache; ccache 3 has no --print-stats
_STATS_SCRIPT = "command -v ccache >/dev/null 2>&1 || exit 3; ccache --print-stats 2>/dev/null || ccache -s"
#: the job log's line naming a compile that missed (``compiler cache missed: <input file>``)
MISSED_LOG_LINE = "compiler cache missed: "
#: how a missed compile's input file is printed after the counters (no digits after the tab: never
#: taken for a counter)
_MISSED = "buildkit-missed\t"
#: this build's own log (``CCACHE_STATSLOG``: a ``# <input file>`` line, then the compile's counters),
#: read and removed: its counters, then each missed compile's input file; the volume's counters without
#: one
_LOG_STATS_SCRIPT = (
    "command -v ccache >/dev/null 2>&1 || exit 3; "
    'if [ -f "$CCACHE_STATSLOG" ]; then ccache --print-log-stats && '
    'awk \'/^# /{f=substr($0,3)} $0=="cache_miss"{print "' + _MISSED + '" f}\' "$CCACHE_STATSLOG" && '
    'rm -f "$CCACHE_STATSLOG"; '
    "else ccache --print-stats 2>/dev/null || ccache -s; fi"
)


def stats_log(build_id: str) -> str:
    """Where a build's compiles log their outcome (``CCACHE_STATSLOG``), in the cache volume: jobs
    sharing the volume side by side (``build --parallel``) count their own compiles only."""
    return f"{CONTAINER_DIR}/buildkit-stats-{build_id}.log"


def read_stats(
    client: Any, image: str, volume: str, *, run_id: str | None = None, log: str | None = None
) -> CacheStats | None:
    """The statistics of one build: its ``log`` (:func:`stats_log`) when it wrote one, else the
    counters of the cache ``volume``; read in a throwaway container of ``image`` (no network,
    removed afterwards); None when the image has no ccache or its output cannot be read."""
    environment = {"CCACHE_DIR": CONTAINER_DIR, **({"CCACHE_STATSLOG": log} if log else {})}
    with throwaway(
        client,
        image,
        ["-c", _LOG_STATS_SCRIPT if log else _STATS_SCRIPT],
        purpose="ccache-stats",
        run_id=run_id,
        entrypoint=["/bin/sh"],
        environment=environment,
        volumes={volume: CONTAINER_DIR},
    ) as box:
        done = box.run(timeout=_STATS_TIMEOUT)
    if done.exit_code != 0:
        return None
    return parse_stats(done.stdout.decode("utf-8", "replace"))
