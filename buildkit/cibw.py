"""cibuildwheel options rendered from a plan Job (pure: no Docker, no files touched).

The rendered environment drives ``python -m cibuildwheel`` in a subprocess. It is the only
channel between the host and the build container, so it is deliberately small:

* the container gets no host filesystem mount (``disable_host_mount``), no Docker socket and
  none of the host's environment (credentials such as ``TWINE_PASSWORD`` stay on the host): the
  build environment is exactly :func:`container_environment`;
* the compiler cache is a named Docker volume (not a host path), one per cache key;
* repair is ``auditwheel repair --plat <policy>`` with the job's exclude globs, which match
  versioned SONAMEs (``librocblas.so*`` matches ``librocblas.so.5``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from buildkit.errors import UsageError
from buildkit.plan import Job

#: host variables cibuildwheel itself needs to reach the engine and run; nothing else is passed
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
    "PIP_CERT",
    "PIP_INDEX_URL",
)

#: where the staged source carries the CA bundle for pip inside the container (see build.py)
CONTAINER_CA_PATH = "/project/.buildkit/ca-bundle.crt"
#: the pip constraints of the build (the torch pin), staged beside it; pip applies PIP_CONSTRAINT to
#: the isolated build environment too, so the extension compiles against the pinned torch
CONSTRAINTS_NAME = "constraints.txt"
CONTAINER_CONSTRAINTS_PATH = "/project/.buildkit/" + CONSTRAINTS_NAME
#: variables rocm-buildkit sets itself; a recipe may repeat them only with the same value
RESERVED = frozenset(
    {
        "HIP_PLATFORM",
        "PYTORCH_ROCM_ARCH",
        "GPU_ARCHS",
        "SOURCE_DATE_EPOCH",
        "BUILDKIT_VERSION",
        "SETUPTOOLS_SCM_PRETEND_VERSION",
        "BUILDKIT_JOB",
        "PIP_CERT",
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "PIP_CONSTRAINT",
        "CCACHE_DIR",
    }
)
CONTAINER_CCACHE_DIR = "/ccache"


@dataclass(frozen=True)
class CibwSettings:
    image: str  # the builder image tag, e.g. rocm-buildkit/debian-rocm:0123456789ab
    source_date_epoch: int
    ccache_volume: str | None  # named volume mounted at /ccache, None disables the cache
    with_ca_bundle: bool  # the staged source carries .buildkit/ca-bundle.crt
    build_isolation: bool = True
    parallel_jobs: int = 2
    labels: Mapping[str, str] = field(default_factory=dict)  # put on the build container


def container_environment(job: Job, settings: CibwSettings) -> dict[str, str]:
    """The environment of the build inside the container, in a stable order."""
    env: dict[str, str] = {
        "HIP_PLATFORM": "amd",
        "ROCM_PATH": job.env.get("ROCM_PATH", "/usr" if job.image_profile == "debian-rocm" else "/opt/rocm"),
        "PYTORCH_ROCM_ARCH": job.archs.pytorch_rocm_arch(),
        "GPU_ARCHS": job.archs.gpu_archs(),
        "SOURCE_DATE_EPOCH": str(settings.source_date_epoch),
        # the planned version, for build backends that take it from the environment
        "BUILDKIT_VERSION": job.version,
        "SETUPTOOLS_SCM_PRETEND_VERSION": job.version,
        "BUILDKIT_JOB": job.id,
        "MAX_JOBS": str(settings.parallel_jobs),
        "PYTHONHASHSEED": "0",
    }
    if settings.ccache_volume:
        env["CCACHE_DIR"] = CONTAINER_CCACHE_DIR
        # hipcc/clang command lines carry absolute paths of the fixed /project tree: hash them as is,
        # and compare the compiler by content so an image rebuild with another hipcc misses the cache
        env["CCACHE_COMPILERCHECK"] = "content"
        env["CCACHE_BASEDIR"] = "/project"
        env["CCACHE_NOHASHDIR"] = "1"
    if settings.with_ca_bundle:
        env["PIP_CERT"] = CONTAINER_CA_PATH
        env["SSL_CERT_FILE"] = CONTAINER_CA_PATH
        env["REQUESTS_CA_BUNDLE"] = CONTAINER_CA_PATH
    if job.torch_index_url:
        env["PIP_EXTRA_INDEX_URL"] = job.torch_index_url
    if job.torch_requirement:
        env["PIP_CONSTRAINT"] = CONTAINER_CONSTRAINTS_PATH
    for key in sorted(job.env):
        value = job.env[key]
        if key in RESERVED and key in env and env[key] != value:
            raise UsageError(
                f"the recipe's env sets {key}={value!r}, but rocm-buildkit sets {key}={env[key]!r} itself "
                "for this job; remove it from the recipe's env"
            )
        env.setdefault(key, value)
    return env


def constraints(job: Job) -> str | None:
    """The pip constraints file of a job (``torch==2.10.*``), None without a torch pin."""
    return f"{job.torch_requirement}\n" if job.torch_requirement else None


def _double_quote(value: str) -> str:
    """``"value"`` with ``\\ " $ `` ` escaped: cibuildwheel's parser (bashlex) keeps it literal."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
    return f'"{escaped}"'


def render_environment(env: Mapping[str, str]) -> str:
    """``CIBW_ENVIRONMENT`` syntax: space separated ``KEY="value"`` pairs, values taken literally."""
    return " ".join(f"{key}={_double_quote(value)}" for key, value in env.items())


def repair_command(job: Job) -> str:
    """``auditwheel repair --plat <policy>`` with the exclude globs.

    When auditwheel refuses the recipe's policy (symbols too recent), the wheel is repaired to the
    best policy its symbols allow instead, so that the gate, not auditwheel, has the last word: it
    fails the job naming the offending file, library and symbol, and nothing reaches ``dist/``.
    """

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
    return f"{attempt(job.platform_tag)} || {{ echo {note} >&2; {attempt('auto')}; }}"


def before_build(job: Job) -> str | None:
    """Install the pinned torch before the build, from its index, so the extension builds against it."""
    if job.torch_requirement is None:
        return None
    cmd = ["python", "-m", "pip", "install", job.torch_requirement]
    if job.torch_index_url:
        cmd += ["--index-url", job.torch_index_url]
    return " ".join(shlex.quote(c) for c in cmd)


def container_engine(settings: CibwSettings) -> str:
    parts = ["docker", "disable_host_mount: true"]
    args = [f"--label={key}={value}" for key, value in sorted(settings.labels.items())]
    if settings.ccache_volume:
        args.append(f"--volume={settings.ccache_volume}:{CONTAINER_CCACHE_DIR}")
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
        "CIBW_CONTAINER_ENGINE": container_engine(settings),
        "CIBW_ENVIRONMENT_LINUX": render_environment(container_environment(job, settings)),
        "CIBW_REPAIR_WHEEL_COMMAND_LINUX": repair_command(job),
        "CIBW_BUILD_FRONTEND": "build" if settings.build_isolation else "build; args: --no-isolation",
        "CIBW_BUILD_VERBOSITY": "1",
        "CIBW_TEST_SKIP": "*",
        "CIBW_ENABLE": "",
    }
    hook = before_build(job)
    if hook:
        options["CIBW_BEFORE_BUILD_LINUX"] = hook
    return options


def subprocess_environment(host_env: Mapping[str, str], options: Mapping[str, str]) -> dict[str, str]:
    """The environment of the cibuildwheel process: a few host variables plus the options."""
    env = {k: host_env[k] for k in HOST_PASSTHROUGH if k in host_env}
    env.update(options)
    return env


def describe(options: Mapping[str, str], keys: Sequence[str] | None = None) -> list[str]:
    """``KEY=value`` lines for the job log."""
    return [f"{k}={options[k]}" for k in (keys or sorted(options))]
