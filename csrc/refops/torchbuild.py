"""setuptools ``build_ext`` of refops: the HIP kernel with hipcc, the torch operator with the host C++
compiler against the installed torch, linked with libtorch_cpu, libc10 and libamdhip64.

A CPU build of torch (``torch==2.13.0+cpu``) has no ``ATen/hip`` headers and no ``libc10_hip``, so
``torch.utils.cpp_extension``'s HIP support does not apply: the ``.hip`` file includes no torch
header and exports a C launcher (``src/refops_hip.h``), and only the ``.cpp`` file sees torch.

Environment:

``PYTORCH_ROCM_ARCH`` / ``GPU_ARCHS``
    ``;``-separated target IDs the device code is compiled for (one is required; both set: equal).
``HIPCC``
    HIP compiler (default: ``$ROCM_PATH/bin/hipcc``, else ``hipcc`` on PATH).
``CXX``
    C++ compiler and link driver of the torch-facing code (default ``c++``).
``HIPFLAGS`` / ``CXXFLAGS``
    extra flags for the ``.hip`` / ``.cpp`` compiles.
``ROCM_PATH``
    ROCm prefix; ``$ROCM_PATH/lib`` is searched for libamdhip64 when it has it.
``MAX_JOBS``
    parallel compile jobs (default: ``build_ext -j`` or the CPU count).
``REFOPS_TORCH_ABI``
    ``pinned`` (default): ``src/ops.cpp`` (TORCH_LIBRARY, ATen and c10), linked with libtorch_cpu and
    libc10, for the torch series built against; ``stable``: ``src/ops_stable.cpp``
    (STABLE_TORCH_LIBRARY, torch's stable C shim only), linked with libtorch_cpu, for every torch from
    the one built against (rocm-buildkit's ``torch: {abi: stable}`` passes ``-DTORCH_STABLE_ONLY
    -DTORCH_TARGET_VERSION=...`` in CXXFLAGS and the requirement in ``BUILDKIT_TORCH_REQUIREMENT``).

``requested_archs`` and ``hip_compiler`` are those of ``csrc/hipbuild.py`` (refkernels): each
distribution is built from its own source tree (its sdist), so neither can import the other's.

A compiler cache is the environment's business (rocm-buildkit puts ccache's masquerade directory
first on PATH and sets ``HIP_CLANG_LAUNCHER``). Reproducibility: ``-ffile-prefix-map`` for the project;
torch's headers are included through a link in the build folder (``build/temp.*/torch-include``), since
the build environment's path is random and torch's inline ``TORCH_CHECK``s embed their header's path
(it would also change the compiler cache's key at every build); a compilation-unit ID from the source's
relative path, ``-Werror=date-time``. No RPATH: ``import refops`` imports torch first, whose libraries the
dynamic loader then finds by SONAME.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, SetupError

ARCH_VARIABLES = ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")
TORCH_ABIS = ("pinned", "stable")
_TARGET_ID = re.compile(r"^gfx[0-9a-z]+(?:-[0-9a-z]+)*(?::[a-z_]+[+-])*$")
#: what each torch ABI links: the stable C shim is libtorch_cpu's alone
TORCH_LIBRARIES = {"pinned": ("torch_cpu", "c10"), "stable": ("torch_cpu",)}


def _torch():  # type: ignore[no-untyped-def]
    try:
        import torch
    except ImportError as exc:
        raise SetupError(
            f"refops compiles against torch, which cannot be imported here ({exc}): build it with "
            "build isolation (pyproject.toml's build-system requires torch) or install torch first"
        ) from None
    return torch


def torch_abi(env: Mapping[str, str]) -> str:
    """``REFOPS_TORCH_ABI``: ``pinned`` (the default) or ``stable``."""
    value = env.get("REFOPS_TORCH_ABI", "").strip() or "pinned"
    if value not in TORCH_ABIS:
        raise SetupError(f"REFOPS_TORCH_ABI={value!r}: expected one of {', '.join(TORCH_ABIS)}")
    return value


def torch_requirement() -> str:
    """Pinned: ``torch==X.Y.*`` of the torch being built against (its C++ ABI holds within that
    series). Stable: ``BUILDKIT_TORCH_REQUIREMENT``, else ``torch>=X.Y`` of that torch."""
    abi = torch_abi(os.environ)
    if abi == "stable" and os.environ.get("BUILDKIT_TORCH_REQUIREMENT", "").strip():
        return os.environ["BUILDKIT_TORCH_REQUIREMENT"].strip()
    version = _torch().__version__
    m = re.match(r"^(\d+)\.(\d+)", version)
    if m is None:
        raise SetupError(f"cannot read the torch series from torch.__version__ {version!r}")
    return f"torch>={m[1]}.{m[2]}" if abi == "stable" else f"torch=={m[1]}.{m[2]}.*"


def torch_sources(sources: list[str], env: Mapping[str, str]) -> list[str]:
    """The extension's sources for the torch ABI chosen: ``src/ops.cpp`` or ``src/ops_stable.cpp``
    (the other left out), the HIP kernel either way."""
    drop = "ops_stable.cpp" if torch_abi(env) == "pinned" else "ops.cpp"
    return [s for s in sources if os.path.basename(s) != drop]


def requested_archs(env: Mapping[str, str]) -> list[str]:
    """Target IDs from PYTORCH_ROCM_ARCH or GPU_ARCHS; SetupError when absent, invalid or in conflict."""
    found = {}
    for name in ARCH_VARIABLES:
        value = env.get(name, "").strip()
        if value:
            archs = [part.strip() for part in value.split(";") if part.strip()]
            bad = [arch for arch in archs if not _TARGET_ID.match(arch)]
            if bad:
                raise SetupError(f"{name}={value!r}: not gfx target IDs: {', '.join(bad)} (e.g. 'gfx90a;gfx942')")
            found[name] = list(dict.fromkeys(archs))
    if not found:
        raise SetupError(
            "no GPU archs requested: set PYTORCH_ROCM_ARCH or GPU_ARCHS to a ';'-separated list of gfx "
            "targets (e.g. PYTORCH_ROCM_ARCH='gfx908;gfx90a'); refops does not guess the archs"
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


class TorchHipBuildExt(build_ext):  # type: ignore[misc]
    """``.hip`` sources with hipcc for the requested archs, ``.cpp`` with CXX against torch."""

    def build_extension(self, ext: Extension) -> None:
        env = dict(os.environ)
        env["HIP_PLATFORM"] = "amd"
        archs = requested_archs(env)
        hipcc = hip_compiler(env)
        cxx = shlex.split(env.get("CXX", "").strip() or "c++")
        torch = _torch()
        torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
        cxx11_abi = int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))

        project = os.path.abspath(os.path.dirname(__file__))
        # torch's headers through a link at a fixed place under the build folder: the isolated build
        # environment's path is random (/tmp/build-env-*), and through the link neither the compile
        # command, nor __FILE__ of torch's inline TORCH_CHECKs, nor the compiler cache's hash sees it
        torch_include = os.path.join(os.path.abspath(self.build_temp), "torch-include")
        os.makedirs(os.path.dirname(torch_include), exist_ok=True)
        if os.path.lexists(torch_include):
            os.unlink(torch_include)
        os.symlink(os.path.join(torch_dir, "include"), torch_include)
        jobs = int(env.get("MAX_JOBS") or self.parallel or os.cpu_count() or 1)
        python_includes = [sysconfig.get_path("include"), sysconfig.get_path("platinclude")]
        common = ["-fPIC", "-O2", f"-ffile-prefix-map={project}=.", "-Werror=date-time", f"-I{project}/src"]

        abi = torch_abi(env)
        commands = []
        objects = []
        for source in torch_sources(list(ext.sources), env):
            relative = os.path.relpath(os.path.abspath(source), project)
            obj = os.path.join(self.build_temp, relative + ".o")
            objects.append(obj)
            if source.endswith(".hip"):
                cmd = [
                    *hipcc, "-x", "hip", "-c", source, "-o", obj, "-std=c++17", *common,
                    *(f"--offload-arch={arch}" for arch in archs),
                    f"-cuid={compilation_unit_id(relative)}", *shlex.split(env.get("HIPFLAGS", "")),
                ]  # fmt: skip
            elif source.endswith(".cpp"):
                cmd = [
                    *cxx, "-c", source, "-o", obj, "-std=c++20", *common,
                    f"-D_GLIBCXX_USE_CXX11_ABI={cxx11_abi}",
                    "-DTORCH_EXTENSION_NAME=_C", "-fvisibility=hidden",
                    *(f"-I{d}" for d in dict.fromkeys(python_includes)),
                    f"-I{torch_include}", f"-I{torch_include}/torch/csrc/api/include",
                    *shlex.split(env.get("CXXFLAGS", "")),
                ]  # fmt: skip
            else:
                raise SetupError(f"{source}: refops builds .hip and .cpp sources only")
            commands.append((relative, cmd))

        what = f"{len(commands)} sources for {';'.join(archs)} ({jobs} jobs, torch ABI {abi})"
        self.announce(f"refops: compiling {what}", 2)
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(commands)))) as pool:
            list(pool.map(lambda item: self._run(item[0], item[1], env), commands))

        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        link = [
            *cxx, "-shared", "-o", target, *objects,
            f"-L{torch_dir}/lib", *(f"-l{lib}" for lib in TORCH_LIBRARIES[abi]),
            *(f"-L{lib}" for lib in hip_lib_dirs(env)), "-lamdhip64",
        ]  # fmt: skip
        self._run(os.path.basename(target), link, env)

    def _run(self, what: str, cmd: list[str], env: dict[str, str]) -> None:
        os.makedirs(os.path.dirname(cmd[cmd.index("-o") + 1]), exist_ok=True)
        print(shlex.join(cmd), flush=True)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, errors="replace", check=False)
        output = (done.stdout + done.stderr).strip()
        if output:
            print(output, flush=True)
        if done.returncode != 0:
            raise CompileError(f"{what}: {cmd[0]} exited with status {done.returncode}")
