"""setuptools ``build_ext`` that compiles ``.hip`` sources with hipcc for the requested gfx archs.

Environment:

``PYTORCH_ROCM_ARCH`` / ``GPU_ARCHS``
    ``;``-separated target IDs (``gfx90a;gfx942`` or ``gfx90a:xnack-``). One is required (no
    guessing); when both are set they must agree.
``HIPCC``
    HIP compiler (default: ``$ROCM_PATH/bin/hipcc``, else ``hipcc`` on PATH). May be a
    HIP-capable ``clang++``.
``CC``
    compiler of the C binding ``module.c`` (default: the HIP compiler, which is a clang).
``CXX``
    link driver (default: the HIP compiler); ``-lamdhip64`` is always passed.
``HIPFLAGS``
    extra flags for the ``.hip`` compiles.
``ROCM_PATH``
    ROCm prefix; ``$ROCM_PATH/lib`` is searched for libamdhip64 when it has it.
``MAX_JOBS``
    parallel compile jobs (default: ``build_ext -j`` or the CPU count).
``CCACHE_DIR``
    when set and ``ccache`` is on PATH, compiles go through ccache (through hipcc's
    ``HIP_CLANG_LAUNCHER`` when the compiler is hipcc, so ccache sees the real clang).
``HIP_PLATFORM``
    forced to ``amd`` for the compiler (hipcc would pick nvcc when it finds one).

Reproducibility: ``-ffile-prefix-map=<project>=.``, a compilation-unit ID derived from the
source's relative path (clang's default hashes the absolute path), ``-Werror=date-time``; wheel
timestamps follow ``SOURCE_DATE_EPOCH`` (handled by setuptools/wheel).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache

from setuptools import Extension
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, SetupError

ARCH_VARIABLES = ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")
_TARGET_ID = re.compile(r"^gfx[0-9a-z]+(?:-[0-9a-z]+)*(?::[a-z_]+[+-])*$")
HIP_SUFFIXES = (".hip", ".cu")


def requested_archs(env: Mapping[str, str]) -> list[str]:
    """Target IDs from PYTORCH_ROCM_ARCH or GPU_ARCHS; SetupError when absent, invalid or in conflict."""
    found = {}
    for name in ARCH_VARIABLES:
        value = env.get(name, "").strip()
        if value:
            archs = [part.strip() for part in value.split(";") if part.strip()]
            bad = [arch for arch in archs if not _TARGET_ID.match(arch)]
            if bad:
                raise SetupError(
                    f"{name}={value!r}: not gfx target IDs: {', '.join(bad)} (expected e.g. 'gfx90a;gfx942')"
                )
            found[name] = list(dict.fromkeys(archs))
    if not found:
        raise SetupError(
            "no GPU archs requested: set PYTORCH_ROCM_ARCH or GPU_ARCHS to a ';'-separated list of gfx "
            "targets (e.g. PYTORCH_ROCM_ARCH='gfx90a;gfx942'); refkernels does not guess the archs"
        )
    values = list(found.values())
    if len(values) == 2 and set(values[0]) != set(values[1]):
        raise SetupError(
            f"PYTORCH_ROCM_ARCH={';'.join(values[0])!r} and GPU_ARCHS={';'.join(values[1])!r} disagree; "
            "set one of them, or both to the same list"
        )
    return values[0]


def hip_compiler(env: Mapping[str, str]) -> list[str]:
    """The HIP compiler command: HIPCC, else $ROCM_PATH/bin/hipcc, else hipcc on PATH."""
    if env.get("HIPCC", "").strip():
        return shlex.split(env["HIPCC"])
    rocm = env.get("ROCM_PATH", "").strip()
    if rocm and os.access(os.path.join(rocm, "bin", "hipcc"), os.X_OK):
        return [os.path.join(rocm, "bin", "hipcc")]
    found = shutil.which("hipcc", path=env.get("PATH"))
    if found is None:
        raise SetupError("hipcc not found: install ROCm's (or Debian's) hipcc, or set HIPCC or ROCM_PATH")
    return [found]


def is_hipcc(command: Sequence[str]) -> bool:
    return "hipcc" in os.path.basename(command[0])


def ccache_launcher(env: Mapping[str, str]) -> str | None:
    """ccache's path when CCACHE_DIR is set and ccache is on PATH."""
    if not env.get("CCACHE_DIR"):
        return None
    return shutil.which("ccache", path=env.get("PATH"))


def hip_lib_dirs(env: Mapping[str, str]) -> list[str]:
    """Directories holding libamdhip64.so among ROCM_PATH/lib, HIP_PATH/lib and /opt/rocm/lib."""
    dirs = []
    for root in (env.get("ROCM_PATH", ""), env.get("HIP_PATH", ""), "/opt/rocm"):
        lib = os.path.join(root, "lib") if root else ""
        if lib and os.path.exists(os.path.join(lib, "libamdhip64.so")) and lib not in dirs:
            dirs.append(lib)
    return dirs


def compilation_unit_id(relative_source: str) -> str:
    """Stable -cuid for a source file: same in every build directory, distinct per file."""
    return hashlib.sha256(relative_source.encode()).hexdigest()[:16]


@cache
def supports_parallel_jobs(compiler: tuple[str, ...], env_items: tuple[tuple[str, str], ...]) -> bool:
    """Whether the compiler accepts clang's ``-parallel-jobs=N`` (AMD's clang does; LLVM 17 does not)."""
    try:
        done = subprocess.run(
            [*compiler, "-parallel-jobs=2", "--version"],
            capture_output=True,
            env=dict(env_items),
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class HipBuildExt(build_ext):  # type: ignore[misc]  # setuptools is untyped here
    """Compile ``.hip`` sources for the requested archs with hipcc, ``.c`` as C; link with -lamdhip64."""

    def build_extension(self, ext: Extension) -> None:
        env = dict(os.environ)
        env["HIP_PLATFORM"] = "amd"
        archs = requested_archs(env)
        hipcc = hip_compiler(env)
        c_compiler = shlex.split(env["CC"]) if env.get("CC", "").strip() else hipcc
        linker = shlex.split(env["CXX"]) if env.get("CXX", "").strip() else hipcc
        launcher = ccache_launcher(env)
        if launcher and is_hipcc(hipcc):
            env.setdefault("HIP_CLANG_LAUNCHER", launcher)  # ccache sees the real clang invocation
            hip_prefix: list[str] = []
        else:
            hip_prefix = [launcher] if launcher else []
        c_prefix = [launcher] if launcher and not is_hipcc(c_compiler) else []
        if launcher and is_hipcc(c_compiler):
            c_prefix = []  # covered by HIP_CLANG_LAUNCHER

        project = os.path.abspath(os.path.dirname(__file__))
        jobs = int(env.get("MAX_JOBS") or self.parallel or os.cpu_count() or 1)
        includes = [f"-I{sysconfig.get_path('include')}", f"-I{os.path.join(project, 'src')}"]
        if sysconfig.get_path("platinclude") != sysconfig.get_path("include"):
            includes.append(f"-I{sysconfig.get_path('platinclude')}")
        common = ["-fPIC", "-O3", f"-ffile-prefix-map={project}=.", "-Werror=date-time", *includes]

        hip_sources = [src for src in ext.sources if src.endswith(HIP_SUFFIXES)]
        parallel_jobs: list[str] = []
        if len(archs) > 1 and supports_parallel_jobs(tuple(hipcc), tuple(sorted(env.items()))):
            per_file = max(1, jobs // max(1, len(hip_sources)))
            parallel_jobs = [f"-parallel-jobs={min(per_file, len(archs))}"] if per_file > 1 else []

        commands = []
        objects = []
        for source in ext.sources:
            relative = os.path.relpath(os.path.abspath(source), project)
            obj = os.path.join(self.build_temp, relative + ".o")
            objects.append(obj)
            if source.endswith(HIP_SUFFIXES):
                cmd = [
                    *hip_prefix, *hipcc, "-x", "hip", "-c", source, "-o", obj, "-std=c++17", *common,
                    *(f"--offload-arch={arch}" for arch in archs),
                    f"-cuid={compilation_unit_id(relative)}", *parallel_jobs,
                    *shlex.split(env.get("HIPFLAGS", "")),
                ]  # fmt: skip
            elif source.endswith(".c"):
                cmd = [*c_prefix, *c_compiler, "-x", "c", "-c", source, "-o", obj, "-std=c11", *common]
            else:
                raise SetupError(f"{source}: refkernels builds .hip and .c sources only")
            commands.append((relative, cmd))

        self.announce(f"refkernels: compiling {len(commands)} sources for {';'.join(archs)} ({jobs} jobs)", 2)
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(commands)))) as pool:
            list(pool.map(lambda item: self._run(item[0], item[1], env), commands))

        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        link = [
            *linker, "-shared", "-o", target, *objects,
            *(f"-L{lib}" for lib in hip_lib_dirs(env)), "-lamdhip64",
        ]  # fmt: skip
        self._run(os.path.basename(target), link, env)

    def _run(self, what: str, cmd: list[str], env: dict[str, str]) -> None:
        obj_dir = os.path.dirname(cmd[cmd.index("-o") + 1])
        os.makedirs(obj_dir, exist_ok=True)
        print(shlex.join(cmd), flush=True)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, errors="replace", check=False)
        output = (done.stdout + done.stderr).strip()
        if output:
            print(output, flush=True)
        if done.returncode != 0:
            raise CompileError(f"{what}: {cmd[0]} exited with status {done.returncode}")
