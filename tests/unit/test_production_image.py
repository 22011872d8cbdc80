"""The production builder's Dockerfile beyond its ROCm data (tests/unit/test_rocm_install.py): the kernel
pruning script (run here by /bin/sh on a made-up ROCm tree: no image is built in unit tests), the pinned
toolset and tools, and the clang configuration that points hipcc at the toolset."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import image as images

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
DOCKERFILE = DOCKER / "manylinux_2_28-rocm.Dockerfile"
LEAN = DOCKER / "manylinux_2_28-rocm.lean.sh"

#: kernel files as rocBLAS, hipBLASLt and hipSPARSELt name them, and files naming no processor
KERNELS = {
    "lib/rocblas/library": [
        "Kernels.so-000-gfx90a-xnack-.hsaco",
        "Kernels.so-000-gfx90a-xnack+.hsaco",
        "Kernels.so-000-gfx942.hsaco",
        "Kernels.so-000-gfx1100.hsaco",
        "TensileLibrary_lazy_gfx942.dat",
        "TensileLibrary_lazy_gfx950.dat",
        "TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx908.co",
        "TensileManifest.txt",
    ],
    "lib/hipblaslt/library": ["extop_gfx942.co", "extop_gfx1201.co", "hipblasltExtOpLibrary.dat"],
    "lib/hipsparselt/library": ["gfx950/kernels.co", "gfx942/kernels.co"],
}


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _rocm(tmp_path: Path) -> Path:
    root = tmp_path / "opt" / "rocm-7.2.2"
    for folder, names in KERNELS.items():
        for name in names:
            path = root / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"\x7fELF kernels")
    (root / "lib" / "librocblas.so.5").write_bytes(b"library")
    return root


def _lean(keep: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(LEAN), keep, str(root)], capture_output=True, text=True, timeout=60)


def test_lean_keeps_the_kernels_of_the_kept_processors_only(tmp_path: Path) -> None:
    root = _rocm(tmp_path)
    done = _lean("gfx90a;gfx942", root)
    assert done.returncode == 0, done.stderr
    assert _tree(root) == {
        "lib/librocblas.so.5",
        "lib/rocblas/library/Kernels.so-000-gfx90a-xnack-.hsaco",
        "lib/rocblas/library/Kernels.so-000-gfx90a-xnack+.hsaco",
        "lib/rocblas/library/Kernels.so-000-gfx942.hsaco",
        "lib/rocblas/library/TensileLibrary_lazy_gfx942.dat",
        "lib/rocblas/library/TensileManifest.txt",
        "lib/hipblaslt/library/extop_gfx942.co",
        "lib/hipblaslt/library/hipblasltExtOpLibrary.dat",
        "lib/hipsparselt/library/gfx942/kernels.co",
    }
    assert "lean: rocblas: removed 3 kernel files, kept 4" in done.stdout
    assert "lean: hipsparselt: removed 1 kernel files, kept 1" in done.stdout


def test_lean_all_keeps_everything_and_a_bad_list_is_refused(tmp_path: Path) -> None:
    root = _rocm(tmp_path)
    before = _tree(root)
    assert _lean("all", root).returncode == 0
    assert _tree(root) == before
    refused = _lean("942", root)
    assert refused.returncode == 2 and "must list processors" in refused.stderr
    assert _tree(root) == before


def test_lean_runs_in_the_layer_that_installs_rocm() -> None:
    """Removed in a later RUN, the kernel files would still weigh on the image in the earlier layer."""
    text = DOCKERFILE.read_text()
    runs = re.split(r"^RUN ", text, flags=re.M)
    install = next(r for r in runs if "${ROCM_PACKAGES}" in r)
    assert 'sh /opt/rocm-buildkit/lean.sh "${KEEP_GFX_ARCHS}" "/opt/rocm-${ROCM_VERSION}"' in install
    assert install.index("${ROCM_PACKAGES}") < install.index("lean.sh")
    assert "COPY manylinux_2_28-rocm.lean.sh /opt/rocm-buildkit/lean.sh" in text
    profile = images.get_profile("manylinux_2_28-rocm")
    assert LEAN.name in profile.context_files  # in the build context, and in the content tag


def _pins() -> dict[str, str]:
    text = (DOCKER / "manylinux_2_28-rocm.tools.txt").read_text()
    return dict(re.findall(r"^([a-z-]+)==(\S+) --hash=sha256:[0-9a-f]{64}$", text, re.M))


def test_the_tools_are_pinned_and_checked_at_their_pins() -> None:
    pins = _pins()
    assert set(pins) == {"auditwheel", "packaging", "pyelftools", "cmake", "ninja"}
    major, minor, *_ = (int(x) for x in pins["auditwheel"].split("."))
    assert (major, minor) >= (6, 2), "auditwheel 6.2.0 is the first whose --exclude takes globs"
    text = DOCKERFILE.read_text()
    assert f"grep -F 'auditwheel {pins['auditwheel']}'" in text
    assert f"grep -F 'cmake version {pins['cmake']}'" in text
    assert f"grep -Fx '{pins['ninja']}'" in text
    assert re.search(
        r'for tool in auditwheel cmake ctest ninja; do ln -sfn "/opt/buildkit-tools/bin/\$tool"', text
    )


def test_the_toolset_is_pinned_and_the_only_one() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG GCC_TOOLSET=13$", text, re.M)  # PyTorch's and TheRock's toolset
    assert "dnf remove -y 'gcc-toolset-*'" in text
    assert '"gcc-toolset-${GCC_TOOLSET}-gcc-c++"' in text
    env = text[text.index("\nENV ") :]
    path = re.search(r"PATH=(\S+)", env)
    assert path is not None
    toolsets = re.findall(r"gcc-toolset-[^/]+", path.group(1))
    assert toolsets == ["gcc-toolset-${GCC_TOOLSET}"]  # the base's toolset is gone from PATH
    assert "LD_LIBRARY_PATH=/opt/rocm/lib:/opt/rh/gcc-toolset-${GCC_TOOLSET}/root/usr/lib64" in env


def test_clang_is_configured_with_the_toolset_and_checked() -> None:
    """ROCm's clang finds gcc-toolset-10..12 or the system GCC 8 on its own: the config files next to
    the real clang binary (its directory, not /opt/rocm/llvm/bin's symlink) name the pinned one, and
    the build fails unless clang and hipcc report selecting it."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    assert (
        'gcc_dir="/opt/rh/gcc-toolset-${GCC_TOOLSET}/root/usr/lib/gcc/x86_64-redhat-linux/${GCC_TOOLSET}"'
        in text
    )
    assert 'llvm_bin=$(dirname "$(readlink -f /opt/rocm/llvm/bin/clang)")' in text
    assert re.search(r"for cfg in clang\.cfg clang\+\+\.cfg; do", text)
    assert 'printf -- \'--gcc-install-dir=%s\\n\' "$gcc_dir" > "$llvm_bin/$cfg"' in text
    assert 'grep -F "Selected GCC installation: /opt/rh/gcc-toolset-${GCC_TOOLSET}/"' in text
    assert 'hipcc -v -x c++ -E -o /dev/null /dev/null 2>&1 | grep -F "gcc-toolset-${GCC_TOOLSET}/"' in text


def test_git_trusts_the_mounted_tree_and_every_python_is_there() -> None:
    text = DOCKERFILE.read_text()
    assert "git config --global --add safe.directory '*'" in text
    checked = re.search(r"for py in ([^;]+); do test -x", text)
    assert checked is not None
    assert checked.group(1).split() == [f"cp3{m}-cp3{m}" for m in range(10, 15)]


@pytest.mark.parametrize("name", ["manylinux_2_28-rocm.tools.txt", "manylinux_2_28-rocm.lean.sh"])
def test_context_files_ship_with_the_dockerfiles(name: str) -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    shipped = data["tool"]["setuptools"]["data-files"]["share/rocm-buildkit/docker"]
    assert any(p.name == name for pattern in shipped for p in ROOT.glob(pattern))


def test_the_pruning_script_is_shellcheck_clean() -> None:
    import os
    import shutil

    found = shutil.which("shellcheck")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("shellcheck is not installed (./dev installs it)")
        pytest.skip("shellcheck is not installed")
    proc = subprocess.run([found, str(LEAN)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
