"""cibuildwheel options rendered from a plan Job (pure: no Docker, no files touched).

The rendered environment is the only channel between the host and the build container, so it is
deliberately small; what the container may see is REFERENCE.md's "What a build guarantees". Here:
the build environment is exactly :func:`container_environment`, cibuildwheel's process gets only
:data:`HOST_PASSTHROUGH`, and ``CIBW_ENVIRONMENT_PASS_LINUX`` is forced empty, which beats a
project's ``[tool.cibuildwheel] environment-pass`` (an environment variable, even an empty one,
overrides pyproject.toml in cibuildwheel's option cascade). The recipe's ``env`` reaches the
container literally (:data:`buildkit.recipe.RESERVED_ENV` refused; its ``MAX_JOBS`` and
``ROCM_PATH`` win over buildkit's defaults). Repair's exclude globs match versioned SONAMEs
(``librocblas.so*`` matches ``librocblas.so.5``).

ROCm from pip (``rocm_pip``): ``before_all`` installs the SDK from the staged wheelhouse with the
job's Python into :data:`ROCM_SDK_DIR`, which ``ROCM_HOME`` and ``CMAKE_PREFIX_PATH`` name; the
compiler stays the image's hipcc (an SDK core wheel carries none in the tests' stand-in); after
repair :mod:`buildkit.building.sdk_link` adds the RPATHs and the ``Requires-Dist``."""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from buildkit import profiles
from buildkit.building import ccache, remote_cache, sdk_link
from buildkit.building.toolchain import job_interpreter
from buildkit.errors import UsageError
from buildkit.plan.models import Job
from buildkit.recipe import RESERVED_ENV
from buildkit.recipe.sections import host_isa

#: host variables cibuildwheel itself needs to reach the engine and run; nothing else is passed.
#: On a Linux host cibuildwheel installs nothing with pip, so no index (PIP_INDEX_URL, often with
#: credentials in it) is passed; the variables here name paths and sockets, never secrets.
HOST_PASSTHROUGH = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
)

#: where the staged source carries the CA bundle for pip inside the container (see buildkit.building.staging)
CONTAINER_CA_PATH = "/project/.buildkit/ca-bundle.crt"
#: the pip constraints of the build (the torch pin), staged beside it; pip applies PIP_CONSTRAINT to
#: the isolated build environment too, so the extension compiles against the pinned torch
CONSTRAINTS_NAME = "constraints.txt"
CONTAINER_CONSTRAINTS_PATH = "/project/.buildkit/" + CONSTRAINTS_NAME
#: the wheelhouse of a hermetic build, staged beside them: every build requirement, resolved on the host
WHEELHOUSE_NAME = "wheelhouse"
CONTAINER_WHEELHOUSE = "/project/.buildkit/" + WHEELHOUSE_NAME
#: cibuildwheel's output folder in the build container, copied out whole beside the wheel
CONTAINER_OUTPUT_DIR = "/output"
#: the build frontends that install with uv, which reads UV_* rather than PIP_* variables
_UV_FRONTENDS = frozenset({"build[uv]", "uv"})
#: variables the recipe may set, overriding buildkit's default (every other one buildkit sets is
#: in :data:`buildkit.recipe.RESERVED_ENV`); the compiler-cache routing a recipe sets is its own
RECIPE_OVERRIDABLE = (
    frozenset({"ROCM_PATH", "MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL", "SKBUILD_BUILD_DIR"})
    | {"BUILDKIT_HOST_ISA"}  # the recipe's host_isa.level, else the policy's baseline
    | ccache.RECIPE_OVERRIDABLE
)
_CONTAINER_CCACHE_DIR = ccache.CONTAINER_DIR
#: the name of every compiler-cache volume starts so (``buildkit cache export`` finds them by it)
CCACHE_VOLUME_PREFIX = "rocm-buildkit-ccache-"
#: ROCm from pip: where ``before_all`` installs the SDK in the build container (``site``) and links
#: ``rocm-sdk path --root`` (``root``: ROCM_HOME) and ``--cmake`` (``cmake``: CMAKE_PREFIX_PATH)
ROCM_SDK_DIR = "/opt/buildkit-rocm-sdk"
#: the staged copy of :mod:`buildkit.building.sdk_link`, run after repair
SDK_LINK_NAME = "sdk_link.py"
CONTAINER_SDK_LINK = "/project/.buildkit/" + SDK_LINK_NAME
#: AMD's layout: where ROCm is when the image is not a profile's (:attr:`buildkit.profiles.Profile.rocm_path`)
DEFAULT_ROCM_PREFIX = profiles.DEFAULT_ROCM_PREFIX


#: flag variables both buildkit (the sysroot) and the job (``offload_compress``) add to: joined
_APPENDED_FLAGS = frozenset({"HIPCC_COMPILE_FLAGS_APPEND", "HIPCC_LINK_FLAGS_APPEND"})


def rocm_prefix(job: Job) -> str:
    """Where the job's builder image has ROCm (``ROCM_PATH``): its profile's ``rocm_path``."""
    if job.image.profile:
        try:
            profile = job.image.profile_data
            return profile.rocm_path if profile is not None else DEFAULT_ROCM_PREFIX
        except UsageError:
            pass
    return DEFAULT_ROCM_PREFIX


#: scikit-build-core's build folder (``build-dir``), which is otherwise a new random temporary folder in
#: every build: its CMake objects' paths, and with them every compile's command line, differ each time,
#: so no compile of a no-change rebuild can hit the compiler cache (a scikit-build-core HIP project
#: measured: 13 misses every rebuild; with ``build/{wheel_tag}``, 325 of 325 hits). A fixed folder in
#: the project (the same /project in every build container) as pypa/build's ``--env-dir`` is for the
#: isolated environment; a recipe's own ``env: {SKBUILD_BUILD_DIR: ...}`` is left to it.
SKBUILD_BUILD_DIR = "build/{wheel_tag}"


def sysroot_environment(job: Job, rocm_path: str) -> dict[str, str]:
    """The variables that compile the job's host code against its compatibility sysroot
    (``manylinux.sysroot``; {} without one). Every compiler a build can call is covered:

    * ``PATH``: the sysroot's wrappers (docker/sysroot.sh: the image's clang with ``--sysroot`` and
      ``--gcc-install-dir``) before the image's compilers, which is what setuptools, torch's
      cpp_extension (``c++``), autotools and meson find; the compiler cache's masquerade stays first;
    * hipcc: ``HIPCC_COMPILE_FLAGS_APPEND`` / ``HIPCC_LINK_FLAGS_APPEND`` (the same flags, the ROCm
      prefix for the device libraries, the profile's ``rocm_lib_links``: the one library folder of the
      image a sysroot build searches, so that the image's own glibc stays out of reach), and
      ``HIP_INCLUDE_PATH`` at the sysroot (hipcc would add ``-I/usr/include``, the image's glibc);
    * CMake: ``CMAKE_TOOLCHAIN_FILE`` (CMake >= 3.21 reads it from the environment)."""
    if not job.sysroot:
        return {}
    profile = job.image.profile_data
    if profile is None:
        raise UsageError(
            f"manylinux.sysroot {job.sysroot}: the job's image is not a profile of rocm-buildkit"
        )
    sysroot = profile.sysroots.get(job.sysroot)
    if sysroot is None:
        raise UsageError(f"image profile {job.image.profile} has no sysroot {job.sysroot!r}")
    # -idirafter: the image's own headers (ROCm's, Python's x86_64-linux-gnu/python3.X/pyconfig.h) are
    # found after the sysroot's, never instead of them: glibc and libstdc++ come from the sysroot
    flags = (
        f"--sysroot={sysroot.path} --gcc-install-dir={sysroot.gcc_install_dir} --rocm-path={rocm_path} "
        "-idirafter /usr/include"
    )
    return {
        "BUILDKIT_SYSROOT": sysroot.path,
        "HIPCC_COMPILE_FLAGS_APPEND": flags,
        "HIPCC_LINK_FLAGS_APPEND": f"{flags} -L{profile.rocm_lib_links}",
        "HIP_INCLUDE_PATH": f"{sysroot.path}/usr/include",
        "CMAKE_TOOLCHAIN_FILE": sysroot.toolchain_file,
        "PATH": sysroot.bin_dir + ccache.PATH_TAIL,
    }


@dataclass(frozen=True)
class CibwSettings:
    image: str  # the builder image tag, e.g. rocm-buildkit/debian-rocm:0123456789ab
    source_date_epoch: int
    ccache_volume: str | None  # named volume mounted at /ccache, None disables the cache
    with_ca_bundle: bool  # the staged source carries .buildkit/ca-bundle.crt
    build_isolation: bool = True
    parallel_jobs: int = 2
    labels: Mapping[str, str] = field(default_factory=dict)  # put on the build container
    #: this build's ccache statistics log in the volume (ccache.stats_log); None: the volume's counters
    stats_log: str | None = None
    #: the volume holding the socket of the relay to ccache's remote storage (remote_cache.channel)
    cache_socket_volume: str | None = None
    #: ccache's remote storage as the build container reaches it (CCACHE_REMOTE_STORAGE)
    ccache_remote: str | None = None
    #: the recipe's ``network``: False runs the container with ``--network=none`` and pip from the
    #: staged wheelhouse (a hermetic build); True is cibuildwheel's usual networked container
    network: bool = True


def container_environment(job: Job, settings: CibwSettings) -> dict[str, str]:
    """The environment of the build inside the container, in a stable order; ``job.env`` added by
    :func:`_add_job_env` (recipe loading refuses reserved variables already: this guards other jobs,
    such as one read back from an older manifest)."""
    rocm_path = job.env.get("ROCM_PATH", rocm_prefix(job))
    env: dict[str, str] = {
        "HIP_PLATFORM": "amd",
        "ROCM_PATH": rocm_path,
        "PYTORCH_ROCM_ARCH": job.archs.pytorch_rocm_arch(),
        "GPU_ARCHS": job.archs.gpu_archs(),
        "SOURCE_DATE_EPOCH": str(settings.source_date_epoch),
        # the planned version, for build backends that take it from the environment
        "BUILDKIT_VERSION": job.version,
        "SETUPTOOLS_SCM_PRETEND_VERSION": job.version,
        "BUILDKIT_JOB": job.id,
        # a stable-ABI job: what the wheel's METADATA must require (torch>=FROM), for the project
        **({"BUILDKIT_TORCH_REQUIREMENT": job.torch_stable.requirement} if job.torch_stable else {}),
        "MAX_JOBS": job.env.get("MAX_JOBS", str(settings.parallel_jobs)),
        # CMake's and ninja's share of the cores too (``build --parallel N``: cores // N per job)
        "CMAKE_BUILD_PARALLEL_LEVEL": job.env.get(
            "CMAKE_BUILD_PARALLEL_LEVEL", job.env.get("MAX_JOBS", str(settings.parallel_jobs))
        ),
        "PYTHONHASHSEED": "0",
    }
    if "SKBUILD_BUILD_DIR" not in job.env:  # scikit-build-core's build folder: SKBUILD_BUILD_DIR
        env["SKBUILD_BUILD_DIR"] = SKBUILD_BUILD_DIR
    if job.rocm_pip is not None:  # the SDK's root and CMake files, as rocm-sdk path gives them
        env["ROCM_HOME"] = f"{ROCM_SDK_DIR}/root"
        env["CMAKE_PREFIX_PATH"] = f"{ROCM_SDK_DIR}/cmake"
    sysroot_env = sysroot_environment(job, rocm_path)
    env.update(sysroot_env)
    env.update(_cache_environment(job, settings, sysroot_env))
    env.update(_host_isa_environment(job))
    if ccache.uses_launcher(job):  # every host compile through the launcher (its host ISA check)
        env["PATH"] = ccache.HOST_CC_WRAPPERS + ":" + env.get("PATH", ccache.PATH_TAIL[1:])
    if settings.with_ca_bundle:
        env["PIP_CERT"] = CONTAINER_CA_PATH
        env["SSL_CERT_FILE"] = CONTAINER_CA_PATH
        env["REQUESTS_CA_BUNDLE"] = CONTAINER_CA_PATH
    if not settings.network:  # hermetic: no index, only the staged wheelhouse
        env["PIP_NO_INDEX"] = "1"
        env["PIP_FIND_LINKS"] = CONTAINER_WHEELHOUSE
        if job.hooks.build_frontend in _UV_FRONTENDS:
            env["UV_NO_INDEX"] = "1"
            env["UV_FIND_LINKS"] = CONTAINER_WHEELHOUSE
    elif job.torch_index_url:
        env["PIP_EXTRA_INDEX_URL"] = job.torch_index_url
    if job.torch_requirement:
        env["PIP_CONSTRAINT"] = CONTAINER_CONSTRAINTS_PATH
    _add_job_env(env, job)
    return env


def host_isa_level(job: Job) -> str | None:
    """The x86-64 level the launcher holds the job's host compiles to: the level of the recipe's host_isa,
    else on an x86_64 job the policy's baseline (x86-64); None: not an x86_64 job."""
    if "BUILDKIT_HOST_ISA" in job.env:
        return job.env["BUILDKIT_HOST_ISA"]
    return host_isa.BASELINE if job.platform_tag.endswith("_x86_64") else None


def _host_isa_environment(job: Job) -> dict[str, str]:
    """``BUILDKIT_HOST_ISA`` in every x86_64 job (:func:`host_isa_level`; the recipe's own is added
    after, from ``job.env``), so that a compile outside CMake's launcher is held to it too; and where
    the launcher logs each compile's ISA flags (cibuildwheel copies its output folder out)."""
    env = {"BUILDKIT_HOST_ISA_LOG": f"{CONTAINER_OUTPUT_DIR}/{host_isa.LOG_NAME}"}
    level = host_isa_level(job)
    if level is not None and "BUILDKIT_HOST_ISA" not in job.env:
        env["BUILDKIT_HOST_ISA"] = level
    return env


def _cache_environment(job: Job, settings: CibwSettings, sysroot_env: dict[str, str]) -> dict[str, str]:
    """Every compile through the cache (:func:`ccache.environment`), or, with no cache, the HIP
    compiles still through the launcher (the same ``-cuid`` as a cached build's)."""
    if not settings.ccache_volume:
        return ccache.environment(job, cached=False)
    env = ccache.environment(job)
    if "PATH" in sysroot_env:  # the masquerade first: ccache then calls the sysroot's wrappers
        env["PATH"] = env["PATH"].removesuffix(ccache.PATH_TAIL) + ":" + sysroot_env["PATH"]
    if settings.stats_log:
        env["CCACHE_STATSLOG"] = settings.stats_log
    if settings.ccache_remote:
        env["CCACHE_REMOTE_STORAGE"] = settings.ccache_remote
    return env


def _add_job_env(env: dict[str, str], job: Job) -> None:
    """``job.env`` added to ``env``: a reserved variable must equal what buildkit sets (else
    UsageError), a flags variable the sysroot sets gets the job's value appended."""
    for key in sorted(job.env):
        value = job.env[key]
        if key in RESERVED_ENV and env.get(key) != value:
            ours = f"sets {key}={env[key]!r}" if key in env else f"reserves {key}"
            raise UsageError(
                f"the job's env sets {key}={value!r}, but rocm-buildkit {ours} itself for this job "
                f"({RESERVED_ENV[key].reason}); remove it from the recipe's env"
            )
        if key in _APPENDED_FLAGS and key in env and value not in env[key]:
            env[key] = f"{env[key]} {value}"  # the sysroot's flags, then the job's (offload_compress)
        else:
            env.setdefault(key, value)


def constraints(job: Job) -> str | None:
    """The pip constraints file of a job (``torch==2.10.*``), None without a torch pin."""
    return f"{job.torch_requirement}\n" if job.torch_requirement else None


def _double_quote(value: str) -> str:
    """``"value"`` with ``\\ " $ `` ` escaped: cibuildwheel's parser (bashlex) keeps it literal."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
    return f'"{escaped}"'


def _render_value(key: str, value: str) -> str:
    """A value taken literally, except buildkit's own ``PATH=<dirs>:$PATH`` (the compiler cache's
    masquerade), whose tail expands to the PATH cibuildwheel set (the job's Python first); a recipe
    can set neither PATH nor any ``$``."""
    if key == "PATH" and value.endswith(ccache.PATH_TAIL):
        return _double_quote(value.removesuffix(ccache.PATH_TAIL))[:-1] + ccache.PATH_TAIL + '"'
    return _double_quote(value)


def render_environment(env: Mapping[str, str]) -> str:
    """``CIBW_ENVIRONMENT`` syntax: space separated ``KEY="value"`` pairs, values taken literally
    (but for buildkit's ``PATH=<dirs>:$PATH``)."""
    return " ".join(f"{key}={_render_value(key, value)}" for key, value in env.items())


#: where the repair command keeps auditwheel's last stderr, in the build container
REPAIR_LOG = "/tmp/buildkit-auditwheel.err"


def repair_command(job: Job) -> str:
    """``auditwheel repair --plat <policy>`` with the exclude globs.

    When auditwheel refuses the recipe's policy (symbols too recent), the wheel is repaired to the best
    policy its symbols allow, so that the gate, not auditwheel, has the last word (naming the offending
    file, library and symbol). When no policy fits at all (glibc 2.43 without a sysroot), or a library
    the wheel needs is not in the image (auditwheel's "could not be located", kept in :data:`REPAIR_LOG`
    and noted as such), the unrepaired wheel goes to the gate as it is, and to quarantine."""

    def attempt(plat: str) -> str:
        parts = ["auditwheel", "repair", "--plat", plat]
        for glob in job.exclude_globs:
            parts += ["--exclude", glob]
        parts += ["-w", "{dest_dir}", "{wheel}"]
        # cibuildwheel substitutes {dest_dir} and {wheel}; quote everything else
        return " ".join(p if p in ("{dest_dir}", "{wheel}") else shlex.quote(p) for p in parts)

    note = shlex.quote(
        f"rocm-buildkit: auditwheel refused {job.platform_tag}; repairing to the best policy the "
        "symbols allow so that the gate can name the offending symbols"
    )
    kept = shlex.quote(
        "rocm-buildkit: auditwheel refused every policy (symbols newer than any it knows); the "
        "unrepaired wheel goes to the gate, which names them, and is kept with its reports"
    )
    missing = shlex.quote(
        "rocm-buildkit: auditwheel cannot repair: a library the wheel needs is not in the builder image "
        "(auditwheel's 'could not be located' above): install it in the image (image.packages) or, when the "
        "runtime provides it, exclude it (repair.exclude); the unrepaired wheel goes to the gate, which "
        "names it, and is kept with its reports"
    )

    def logged(plat: str) -> str:  # auditwheel's stderr, kept for the cause and passed on
        return f"{{ {attempt(plat)} 2>{REPAIR_LOG}; s=$?; cat {REPAIR_LOG} >&2; [ $s -eq 0 ]; }}"

    lacking = f"grep -q 'could not be located' {REPAIR_LOG}"
    # when no policy fits either, the unrepaired wheel goes on as is: the gate refuses it (its tag,
    # the symbols, members and libraries named) and the build keeps it in quarantine, never in dist/
    unrepaired = (
        f"if {lacking}; then echo {missing} >&2; else echo {kept} >&2; fi; cp {{wheel}} {{dest_dir}}/"
    )
    retry = f"echo {note} >&2; {logged('auto')} || {{ {unrepaired}; }}"
    repair = f"{logged(job.platform_tag)} || {{ if {lacking}; then {unrepaired}; else {retry}; fi; }}"
    if job.rocm_pip_requirement is None:
        return repair
    return f"{{ {repair}; }} && {sdk_link_command(job)}"


def sdk_link_command(job: Job) -> str:
    """ROCm from pip: :mod:`buildkit.building.sdk_link` on the repaired wheel (the job's exclude globs)."""
    folders = [sdk_link.CORE_LIB]
    if job.rocm_pip is not None and "libraries" in job.rocm_pip.extras:
        folders.append(sdk_link.LIBRARIES_LIB)
    parts = ["python", CONTAINER_SDK_LINK, "{dest_dir}", "--requires", job.rocm_pip_requirement or ""]
    for folder in folders:
        parts += ["--rpath", folder]
    for glob in job.exclude_globs:
        parts += ["--needs", glob]
    return " ".join(p if p == "{dest_dir}" else shlex.quote(p) for p in parts)


def _sdk_install_command(job: Job, *, network: bool) -> str | None:
    """ROCm from pip: the SDK installed into :data:`ROCM_SDK_DIR` (module docstring); None without it."""
    requirement = job.rocm_pip_build_requirement
    if requirement is None:
        return None
    python = job_interpreter(job)
    index = [] if network else ["--no-index", "--find-links", CONTAINER_WHEELHOUSE]
    install = [python, "-m", "pip", "install", "--disable-pip-version-check", "--target"]
    install += [f"{ROCM_SDK_DIR}/site", *index, requirement]
    sdk = f"PYTHONPATH={ROCM_SDK_DIR}/site {shlex.quote(python)} -m rocm_sdk path"
    return " && ".join(
        [
            " ".join(shlex.quote(p) for p in install),
            f'ln -sfn "$({sdk} --root)" {ROCM_SDK_DIR}/root',
            f'ln -sfn "$({sdk} --cmake)" {ROCM_SDK_DIR}/cmake',
            f"echo rocm-buildkit: ROCm from pip: ROCM_HOME={ROCM_SDK_DIR}/root "
            f'"($(readlink {ROCM_SDK_DIR}/root))" >&2',
        ]
    )


def before_build(job: Job, *, isolation: bool = True, network: bool = True) -> str | None:
    """Install the pinned torch and the recipe's ``build_requires`` into the job's Python before a
    ``--no-isolation`` build (offline from the staged wheelhouse). With build isolation the frontend's
    fresh environment cannot see the interpreter's packages: the staged ``[build-system] requires`` gets
    both (:mod:`buildkit.building.buildsystem`) and PIP_CONSTRAINT pins torch there; None then, or with
    nothing to add."""
    if isolation:
        return None
    commands = []
    if job.torch_requirement:  # from its own index only: never a torch of the same name elsewhere
        cmd = ["python", "-m", "pip", "install", job.torch_requirement]
        if job.torch_index_url and network:
            cmd += ["--index-url", job.torch_index_url]
        commands.append(cmd)
    if job.hooks.build_requires:
        commands.append(["python", "-m", "pip", "install", *job.hooks.build_requires])
    if not commands:
        return None
    return " && ".join(" ".join(shlex.quote(c) for c in cmd) for cmd in commands)


#: the flag that turns build isolation off, per build frontend
_NO_ISOLATION = {
    "build": "--no-isolation",
    "build[uv]": "--no-isolation",
    "pip": "--no-build-isolation",
    "uv": "--no-build-isolation",
}


#: the frontends that can make their isolated environment at a given path (pypa/build's ``--env-dir``)
_ENV_DIR_FRONTENDS = frozenset({"build", "build[uv]"})


def build_frontend(name: str, isolation: bool, *, fixed_env: bool = False) -> str:
    """``CIBW_BUILD_FRONTEND``: the recipe's frontend, with isolation turned off by ``--no-isolation``.

    With ``fixed_env`` (``ccache.Layout.fixed_build_env``) an isolated build by ``build`` or ``build[uv]``
    makes its environment at :data:`ccache.BUILD_ENV_DIR` (why: there), with or without the compiler
    cache; pip and uv have no such option: their environments stay at random paths."""
    if not isolation:
        return f"{name}; args: {_NO_ISOLATION[name]}"
    if fixed_env and name in _ENV_DIR_FRONTENDS:
        return f"{name}; args: --env-dir {ccache.BUILD_ENV_DIR}"
    return name


def _container_engine(settings: CibwSettings) -> str:
    parts = ["docker", "disable_host_mount: true"]
    args = [f"--label={key}={value}" for key, value in sorted(settings.labels.items())]
    if not settings.network:
        args.append("--network=none")
    if settings.ccache_volume:
        args.append(f"--volume={settings.ccache_volume}:{_CONTAINER_CCACHE_DIR}")
    if settings.cache_socket_volume:  # the relay's socket: the one way out to the remote store
        args.append(f"--volume={settings.cache_socket_volume}:{remote_cache.SOCKET_DIR}")
    if args:
        parts.append("create_args: " + " ".join(shlex.quote(a) for a in args))
    return "; ".join(parts)


def cibuildwheel_options(job: Job, settings: CibwSettings) -> dict[str, str]:
    """The ``CIBW_*`` variables of one job."""
    options = {
        "CIBW_PLATFORM": "linux",
        "CIBW_ARCHS_LINUX": "x86_64",
        "CIBW_BUILD": f"{job.cp_tag}-manylinux_x86_64",
        "CIBW_MANYLINUX_X86_64_IMAGE": settings.image,
        "CIBW_CONTAINER_ENGINE": _container_engine(settings),
        "CIBW_ENVIRONMENT_LINUX": render_environment(container_environment(job, settings)),
        # empty beats the project's [tool.cibuildwheel] environment-pass: no host variable gets in
        "CIBW_ENVIRONMENT_PASS_LINUX": "",
        "CIBW_REPAIR_WHEEL_COMMAND_LINUX": repair_command(job),
        "CIBW_BUILD_FRONTEND": build_frontend(
            job.hooks.build_frontend, settings.build_isolation, fixed_env=ccache.layout(job).fixed_build_env
        ),
        "CIBW_BUILD_VERBOSITY": "1",
        "CIBW_ENABLE": "",
        # cibuildwheel 4 audits abi3 wheels with abi3audit in a virtualenv it downloads on the host;
        # the gate audits every abi3 job's wheel itself (job-identity: buildkit.gate.pyabi, streamed)
        "CIBW_AUDIT_COMMAND_LINUX": "",
    }
    hooks = job.hooks
    # every hook is set, empty when the recipe has none: an environment variable beats the project's
    # [tool.cibuildwheel] table, so the recipe is the only source of what runs in the container
    torch_hook = before_build(job, isolation=settings.build_isolation, network=settings.network)
    sdk = _sdk_install_command(job, network=settings.network)
    options["CIBW_BEFORE_ALL_LINUX"] = " && ".join((*((sdk,) if sdk else ()), *hooks.before_all))
    # this build's hit rate starts at zero (with the cache); the layout's wrappers of hipcc's clang
    # are made (in every build: they run the HIP launcher)
    setup = ccache.setup_commands(job, cached=bool(settings.ccache_volume))
    options["CIBW_BEFORE_BUILD_LINUX"] = " && ".join(
        (*setup, *((torch_hook,) if torch_hook else ()), *hooks.before_build)
    )
    options["CIBW_CONFIG_SETTINGS_LINUX"] = " ".join(
        shlex.quote(f"{name}={value}") for name, values in hooks.config_settings for value in values
    )
    options["CIBW_BEFORE_TEST_LINUX"] = ""
    options["CIBW_TEST_COMMAND_LINUX"] = " && ".join(hooks.test_command)
    options["CIBW_TEST_REQUIRES_LINUX"] = " ".join(shlex.quote(r) for r in hooks.test_requires)
    options["CIBW_TEST_SKIP"] = "" if hooks.test_command else "*"
    return options


def subprocess_environment(host_env: Mapping[str, str], options: Mapping[str, str]) -> dict[str, str]:
    """The environment of the cibuildwheel process: :data:`HOST_PASSTHROUGH` plus the options, less a
    variable carrying URL credentials (cibuildwheel prints its options, and nothing it runs needs them)."""
    passed = (k for k in HOST_PASSTHROUGH if k in host_env)
    env = {k: host_env[k] for k in passed if not has_url_credentials(host_env[k])}
    env.update(options)
    return env


_URL_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*:[^/@\s]*@")


def has_url_credentials(value: str) -> bool:
    """True for a value holding a URL with a password: ``https://bot:s3cr3t@host/simple``."""
    return _URL_CREDENTIALS.search(value) is not None


def describe(options: Mapping[str, str], keys: Sequence[str] | None = None) -> list[str]:
    """``KEY=value`` lines for the job log."""
    return [f"{k}={options[k]}" for k in (keys or sorted(options))]


def cache_key(job: Job, image_tag: str) -> str:
    """What the jobs sharing one compiler-cache volume have in common: the builder image (its
    compilers), the ROCm release, the arch list and the sysroot; never the Python or the job id, so
    the jobs of a matrix that differ in their Python only reuse each other's device code. ccache's
    own key still holds each compile's flags, compiler and input: sharing never serves a wrong
    object (see :mod:`buildkit.building.ccache`)."""
    archs = ";".join(str(a) for a in job.archs.kept)
    return "\0".join((image_tag, job.rocm, archs, job.sysroot or ""))


def ccache_volume(job: Job, image_tag: str) -> str:
    """The compiler-cache volume of a job: one per :func:`cache_key`."""
    key = hashlib.sha256(cache_key(job, image_tag).encode()).hexdigest()[:12]
    return f"{CCACHE_VOLUME_PREFIX}{key}"
