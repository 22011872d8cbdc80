"""The builder contract as the manylinux_2_28-rocm image meets it (or an older one did not): probe.sh's
output lines, as a real probe of such an image prints them, judged by buildkit.image.probe.problems.
No image runs here (the shared engine is not used by unit tests; tests/docker/test_builder_contract.py
probes real images): the lines are those probe.sh prints, built from the image's documented layout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from buildkit.image.probe import MIN_AUDITWHEEL, Contract, parse_probe, probe_script, problems

TOOLSET_13 = "/opt/rh/gcc-toolset-13/root/usr/lib/gcc/x86_64-redhat-linux/13"
PYTHONS = [f"cp3{m}-cp3{m}" for m in range(10, 15)]


def _manylinux(**overrides: str) -> str:
    """probe.sh's lines for the production image: manylinux's Pythons, the pinned tools, ROCm's hipcc
    with clang.cfg naming gcc-toolset-13, and gcc-toolset-13's g++ first on PATH."""
    checks = {f"python:{tag}": f"ok\t3.1{tag[4]}.9" for tag in PYTHONS}
    checks.update(
        {
            "python:cp39-cp39": "ok\t3.9.23",
            "auditwheel": "ok\tauditwheel 6.8.2 installed at /opt/buildkit-tools/lib/python3.12",
            "patchelf": "ok\tpatchelf 0.17.2",
            "hip-platform": "ok\tamd",
            "hipcc": "ok\t/opt/rocm/bin/hipcc",
            "hip-archs": "ok\t",
            "hipcc-gcc": f"ok\t{TOOLSET_13}",
            "gxx": "ok\t13",
        }
    )
    checks.update(overrides)
    return "".join(f"{k}\t{v}\n" for k, v in checks.items() if v)


CONTRACT = Contract.of(PYTHONS, ["gfx942", "gfx950"])


def test_the_production_image_serves_every_python_and_arch() -> None:
    assert problems(parse_probe(_manylinux()), CONTRACT) == []


@pytest.mark.parametrize(
    ("version", "refused"),
    [("5.4.0", True), ("6.1.0", True), (MIN_AUDITWHEEL, False), ("6.8.2", False)],
)
def test_auditwheel_before_globbing_excludes_is_refused(version: str, refused: bool) -> None:
    """auditwheel 6.2.0 added fnmatch to repair --exclude (pypa/auditwheel#508; its repair.py imports
    fnmatch, 6.1.0's does not). The August 2023 base carried 5.4.0."""
    out = _manylinux(auditwheel=f"ok\tauditwheel {version} installed at /usr/local/lib (python 3.12)")
    gaps = problems(parse_probe(out), CONTRACT)
    if refused:
        assert gaps == [
            f"auditwheel >= 6.2.0 (found auditwheel {version} installed at /usr/local/lib (python 3.12)): "
            "older releases take --exclude literally, so the ROCm runtime globs would be grafted into "
            "the wheel"
        ]
    else:
        assert gaps == []


@pytest.mark.parametrize(
    ("selected", "gap"),
    [
        # without clang.cfg, ROCm's clang picks EL8's GCC 8.5 (or a gcc-toolset-10..12 it finds itself)
        ("/usr/lib/gcc/x86_64-redhat-linux/8", "it selected /usr/lib/gcc/x86_64-redhat-linux/8"),
        (
            "/opt/rh/gcc-toolset-12/root/usr/lib/gcc/x86_64-redhat-linux/12",
            "it selected /opt/rh/gcc-toolset-12",
        ),
        ("", "it selected no GCC installation"),
        (TOOLSET_13, None),
    ],
)
def test_hipcc_must_use_the_toolset_of_g_plus_plus(selected: str, gap: str | None) -> None:
    gaps = problems(parse_probe(_manylinux(**{"hipcc-gcc": f"ok\t{selected}"})), CONTRACT)
    if gap is None:
        assert gaps == []
    else:
        assert len(gaps) == 1 and gap in gaps[0] and "g++ 13" in gaps[0]


def test_a_base_without_cpython_3_13_and_3_14_is_refused() -> None:
    """The August 2023 manylinux_2_28 base had no CPython 3.13 (nor 3.14)."""
    out = _manylinux(**{"python:cp313-cp313": "missing\t", "python:cp314-cp314": "missing\t"})
    assert problems(parse_probe(out), CONTRACT) == [
        "/opt/python/cp313-cp313/bin/python (the planned CPython cp313-cp313)",
        "/opt/python/cp314-cp314/bin/python (the planned CPython cp314-cp314)",
    ]


def test_probe_sh_reports_the_gcc_hipcc_selects(tmp_path: Path) -> None:
    """probe.sh itself, run by /bin/sh here with a stand-in hipcc that prints what clang -v prints."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hipcc = bin_dir / "hipcc"
    hipcc.write_text(
        "#!/bin/sh\n"
        'case "$*" in *-v*) echo "clang version 20.0.0git"; '
        f'echo "Found candidate GCC installation: {TOOLSET_13}"; '
        f'echo "Selected GCC installation: {TOOLSET_13}" >&2 ;; esac\nexit 0\n'
    )
    hipcc.chmod(0o755)
    gxx = bin_dir / "g++"
    gxx.write_text("#!/bin/sh\necho 13\n")
    gxx.chmod(0o755)
    proc = subprocess.run(
        ["/bin/sh", "-c", probe_script()],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "PROBE_PYTHONS": "", "PROBE_ARCHS": "gfx942"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = parse_probe(proc.stdout)
    assert found["hipcc-gcc"] == ("ok", TOOLSET_13)
    assert found["gxx"] == ("ok", "13")
    assert found["hipcc"] == ("ok", str(hipcc))
