"""The compiler cache: every C, C++ and HIP compile of a build goes through ccache, without the project
doing anything, and the build says how often it hit (what and why: docs/REFERENCE.md, "The compiler
cache works for any project" and "Device code once per matrix").

A job's cache is a named Docker volume mounted at :data:`CONTAINER_DIR`; ``--no-cache`` mounts none
and routes only HIP compiles, through the launcher. :func:`environment` routes the three ways a
project calls its compilers: by name through PATH, hipcc by full path, CMake. A CMake configure probe
(``CMakeScratch/TryCompile-XXXXXX/``, a new random path at every configure) is run with
``CCACHE_DISABLE=1``: it could never hit.

**The HIP launcher** (``hip_launcher.sh``, staged at :data:`STAGED_LAUNCHER`, :func:`launcher_script`)
runs every HIP compile of a build whose layout routes them (:func:`uses_launcher`), with or without
the cache, and gives one lacking ``-cuid=``/``-fuse-cuid=`` a ``-cuid=`` of 16 hex: the sha256 of its
arguments as the project gave them, less what ccache leaves out of its hash (the compiler's path, the
output files ``-o``/``-MF``/``-MT``/``-MQ``, the include folders), so a cached HIP object is the
uncached one's bytes (tests/docker/test_hip_cuid_e2e.py). No ``CCACHE_BASEDIR``: the tree is always at
``/project``, and the rewriting would change ``__FILE__`` and debug info. The Python include folders
are not in :data:`IGNORED_OPTIONS`: the images hold every Python's headers side by side, so a
direct-mode manifest naming 3.13's ``Python.h`` would match in the 3.14 job.

The layout is the one the image's profile declares (:data:`NAMED`); an image of the project's own
Dockerfile or a ref gets :data:`ANY` (both usual masquerade directories, no launcher).
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
#: where the HIP launcher is staged in the source (module docstring): ``hip-launcher COMPILER ARG...``
#: runs ccache (with :data:`CCACHE_SWITCH` set) or the compiler
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
    #: the image's pypa/build takes ``--env-dir`` (>= 1.5: ``cibw.build_frontend``); a builder declaring
    #: a Debian layout installs docker/debian-rocm.python.txt (build 1.6.1) too
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
#: the layout of each (``cache_layout``, ``cache_hip``) a profile may declare
#: (:data:`buildkit.profiles.CACHE_LAYOUTS`); an image extended with packages keeps its profile's
NAMED: Mapping[tuple[str, str], Layout] = MappingProxyType(
    {
        ("debian", "launcher"): DEBIAN,
        ("debian", "build-wrappers"): DEBIAN_SID,
        ("el", "image-wrappers"): EL,
    }
)


def layout(job: Job) -> Layout:
    """The compiler-cache layout of the job's builder image's profile; :data:`ANY` when it declares none."""
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
    """The job's layout routes HIP compiles through :data:`HIP_LAUNCHER`, with or without the cache."""
    chosen = layout(job)
    return bool(chosen.hip) or chosen.launchers


def launcher_script() -> str:
    """The launcher as staged: ``hip_launcher.sh``, beside this module."""
    return resources.files("buildkit.building").joinpath("hip_launcher.sh").read_text(encoding="utf-8")


def environment(job: Job, *, cached: bool = True) -> dict[str, str]:
    """The build environment that sends the job's compiles through the cache (``cached``), else its HIP
    compiles through the launcher alone; a routing variable the job's env sets itself
    (:data:`RECIPE_OVERRIDABLE`) is left to it."""
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
    """The statistics of one build: its ``log`` (:func:`stats_log`), else the counters of the cache
    ``volume``, read in a throwaway container of ``image``; None when there are none to read."""
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
