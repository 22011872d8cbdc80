"""``buildkit archs`` and ``buildkit rocm`` through the real entry point (subprocess) and main()."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")}
    # An empty PATH entry for tools: no rocm_agent_enumerator can answer from the host.
    base["PATH"] = os.path.dirname(sys.executable)
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        capture_output=True,
        text=True,
        env=base,
        cwd=ROOT,
        check=False,
    )


EXAMPLE = {"PYTORCH_ROCM_ARCH": "gfx908;gfx90a;gfx942;gfx950"}


def test_issue_example_explain() -> None:
    out = run("archs", "--rocm", "6.4", "--explain", env=EXAMPLE)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        "export PYTORCH_ROCM_ARCH='gfx908;gfx90a;gfx942'\nexport GPU_ARCHS='gfx908;gfx90a;gfx942'\n"
    )
    assert "explain: source PYTORCH_ROCM_ARCH: gfx908;gfx90a;gfx942;gfx950 (chosen" in out.stderr
    assert "explain: gfx950: dropped: needs ROCm >= 7.0, pinned 6.4" in out.stderr
    for arch in ("gfx908", "gfx90a", "gfx942"):
        assert f"explain: {arch}: kept: supported by ROCm 6.4" in out.stderr


def test_issue_example_strict_exits_5() -> None:
    out = run("archs", "--rocm", "6.4", "--strict", env=EXAMPLE)
    assert out.returncode == 5
    assert "gfx950: dropped: needs ROCm >= 7.0, pinned 6.4" in out.stderr
    assert "Traceback" not in out.stderr
    assert "PYTORCH_ROCM_ARCH='gfx908;gfx90a;gfx942'" in out.stdout


def test_strict_without_drops_exits_0() -> None:
    out = run("archs", "--rocm", "7.0", "--strict", env=EXAMPLE)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""


def test_drops_are_reported_even_without_explain() -> None:
    out = run("archs", "--rocm", "6.4", env=EXAMPLE)
    assert out.returncode == 0
    assert out.stderr == "buildkit archs: gfx950: dropped: needs ROCm >= 7.0, pinned 6.4\n"


def test_invalid_arch_exits_4_naming_it() -> None:
    out = run("archs", "--rocm", "6.4", "--archs", "gfx90a;bogus")
    assert out.returncode == 4
    assert "invalid GPU arch 'bogus'" in out.stderr and "Traceback" not in out.stderr


def test_nothing_left_exits_4() -> None:
    out = run("archs", "--rocm", "6.4", "--archs", "gfx950")
    assert out.returncode == 4
    assert "no GPU arch left for ROCm 6.4: asked gfx950" in out.stderr


def test_unknown_release_is_a_usage_error() -> None:
    out = run("archs", "--rocm", "4.0", "--archs", "gfx90a")
    assert out.returncode == 2
    assert "no data for ROCm 4.0 (known releases: 5.2, 5.7" in out.stderr


def test_rocm_is_required_without_recipe() -> None:
    out = run("archs", "--archs", "gfx90a")
    assert out.returncode == 2 and "--rocm is required" in out.stderr


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("flags", "--offload-arch=gfx90a:xnack- --offload-arch=gfx942\n"),
        ("cmake", "gfx90a:xnack-;gfx942\n"),
        ("env", "export PYTORCH_ROCM_ARCH='gfx90a:xnack-;gfx942'\nexport GPU_ARCHS='gfx90a:xnack-;gfx942'\n"),
        ("github-env", "PYTORCH_ROCM_ARCH=gfx90a:xnack-;gfx942\nGPU_ARCHS=gfx90a:xnack-;gfx942\n"),
    ],
)
def test_formats(fmt: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["archs", "--rocm", "6.4", "--archs", "gfx942,gfx90a:xnack-", "--format", fmt])
    assert capsys.readouterr().out == expected


def test_json_format(capsys: pytest.CaptureFixture[str]) -> None:
    main(["archs", "--rocm", "6.4", "--archs", "gfx942 gfx950", "--format", "json"])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["kept"] == ["gfx942"]
    assert data["dropped"] == [
        {"arch": "gfx950", "kept": False, "reason": "dropped: needs ROCm >= 7.0, pinned 6.4"}
    ]
    assert data["CMAKE_HIP_ARCHITECTURES"] == "gfx942"


def test_toolchain_option() -> None:
    out = run(
        "archs",
        "--rocm",
        "5.7",
        "--toolchain",
        "debian-trixie",
        "--archs",
        "gfx942;gfx950",
        "--format",
        "cmake",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "gfx942\n"
    assert "gfx950: dropped: not compilable by toolchain debian-trixie (ROCm 5.7)" in out.stderr


def test_allow_option() -> None:
    out = run("archs", "--rocm", "7.0", "--archs", "gfx942;gfx1100", "--allow", "gfx942", "--format", "cmake")
    assert out.stdout == "gfx942\n"
    assert "gfx1100: dropped: not in the recipe's allow-list (gfx942)" in out.stderr


def test_recipe_archs_and_toolchain(tmp_path: Path) -> None:
    out = run("archs", "--recipe", "recipes/reference-trixie.yaml", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["source"] == "recipe"
    assert data["kept"] == ["gfx908", "gfx90a", "gfx942"]
    assert any("debian-trixie" in line for line in data["trail"])


def test_cli_archs_beat_the_recipe() -> None:
    out = run("archs", "--recipe", "recipes/reference-trixie.yaml", "--archs", "gfx1100", "--format", "cmake")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "gfx1100\n"


def test_recipe_with_several_releases_needs_rocm() -> None:
    out = run("archs", "--recipe", "recipes/aiter.yaml")
    assert out.returncode == 2 and "choose one with --rocm" in out.stderr
    out = run("archs", "--recipe", "recipes/aiter.yaml", "--rocm", "7.2", "--format", "cmake")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "gfx942;gfx950\n"
    out = run("archs", "--recipe", "recipes/aiter.yaml", "--rocm", "6.4", "--format", "cmake", "--strict")
    assert out.returncode == 5
    assert out.stdout == "gfx942\n"
    assert "buildkit archs: gfx950: dropped: needs ROCm >= 7.0, pinned 6.4" in out.stderr


def test_rocm_show_human_and_json() -> None:
    out = run("rocm", "show", "7.2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ROCm 7.2")
    assert "librocblas.so*" in out.stdout and "librocblas.so.5" in out.stdout
    assert "libamdhip64.so.7" in out.stdout
    assert "unverified:" in out.stdout
    out = run("rocm", "show", "6.4", "--json")
    data = json.loads(out.stdout)
    assert data["version"] == "6.4"
    assert "gfx950" not in data["archs"]
    assert data["torch"]["pytorch_org"][0]["index"] == "https://download.pytorch.org/whl/rocm6.4"
    assert data["el8_install"]["rocm_repo"] == "https://repo.radeon.com/rocm/rhel8/6.4.3/main"
    assert "hipsolver-devel" in data["el8_install"]["packages"]


def test_rocm_show_names_the_production_image_s_repositories() -> None:
    out = run("rocm", "show", "7.1")
    assert out.returncode == 0, out.stderr
    assert "EL8 install (manylinux_2_28-rocm): ROCm 7.1.1" in out.stdout
    assert "  ROCm repository:     https://repo.radeon.com/rocm/el8/7.1.1/main\n" in out.stdout
    assert "  graphics repository: https://repo.radeon.com/graphics/7.1.1/el/8/main/x86_64/" in out.stdout
    assert "  unverified: " in out.stdout
    none = run("rocm", "show", "6.1")
    assert "EL8 install (manylinux_2_28-rocm): no data" in none.stdout


def test_rocm_show_unknown() -> None:
    out = run("rocm", "show", "8.0")
    assert out.returncode == 2 and "known releases" in out.stderr


def test_rocm_ls(capsys: pytest.CaptureFixture[str]) -> None:
    main(["rocm", "ls"])
    text = capsys.readouterr().out
    for version in ("5.7", "6.0", "6.1", "6.2", "6.3", "6.4", "7.0", "7.1", "7.2", "7.14", "10.0"):
        assert f"\n{version} " in text
    assert "debian-trixie" in text
    main(["rocm", "ls", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [r["version"] for r in data["releases"]][-3:] == ["7.2", "7.14", "10.0"]


REVIEW_ENV = {"PYTORCH_ROCM_ARCH": "gfx942;gfx950", "GPU_ARCHS": "gfx90a"}


def test_ignored_gpu_archs_is_explained_and_warned() -> None:
    out = run("archs", "--rocm", "7.2", "--explain", env=REVIEW_ENV)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "export PYTORCH_ROCM_ARCH='gfx942;gfx950'\nexport GPU_ARCHS='gfx942;gfx950'\n"
    assert (
        "explain: source GPU_ARCHS=gfx90a: set but ignored (PYTORCH_ROCM_ARCH takes precedence)\n"
        in out.stderr
    )
    warning = (
        "buildkit archs: warning: GPU_ARCHS=gfx90a: set but ignored "
        "(PYTORCH_ROCM_ARCH takes precedence: gfx942;gfx950)\n"
    )
    assert warning in out.stderr
    # the warning does not need --explain, and --strict is about drops only
    quiet = run("archs", "--rocm", "7.2", "--strict", env=REVIEW_ENV)
    assert quiet.returncode == 0
    assert quiet.stderr == warning


def test_recipe_overriding_the_variables_warns() -> None:
    out = run(
        "archs",
        "--recipe",
        "recipes/reference-trixie.yaml",
        "--format",
        "cmake",
        env={"GPU_ARCHS": "gfx1100"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "gfx908;gfx90a;gfx942\n"
    assert out.stderr == (
        "buildkit archs: warning: GPU_ARCHS=gfx1100: set but ignored "
        "(the recipe's archs.list takes precedence: gfx908;gfx90a;gfx942)\n"
    )


def test_unknown_processor_exits_4_with_suggestions() -> None:
    out = run("archs", "--rocm", "7.0", "--archs", "gfx942;gfx905")
    assert out.returncode == 4
    assert out.stderr == (
        "invalid GPU arch 'gfx905': gfx905 is not an AMDGPU processor; "
        "did you mean gfx950, gfx90a or gfx908? (from --archs)\n"
    )


def test_a_recipes_exported_variables_are_printed_in_step_with_archs(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        "name: demo\nsource: {path: .}\nversion: {base: '1.0'}\npython: ['3.13']\nrocm: ['5.7']\n"
        "archs: {list: [gfx908, gfx90a], toolchain: debian-trixie,\n"
        "        export: {HCC_AMDGPU_TARGET: ',', CMAKE_HIP_ARCHITECTURES: ';'}}\n"
        "manylinux: {policy: manylinux_2_41}\nimage: debian-rocm\n"
    )
    out = run("archs", "--recipe", str(recipe))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[2:] == [
        "export HCC_AMDGPU_TARGET=gfx908,gfx90a",
        "export CMAKE_HIP_ARCHITECTURES='gfx908;gfx90a'",
    ]
    out = run("archs", "--recipe", str(recipe), "--archs", "gfx942", "--format", "json")
    assert json.loads(out.stdout)["exported"]["HCC_AMDGPU_TARGET"] == "gfx942"


def test_env_format_reaches_child_processes_through_eval() -> None:
    """``eval "$(buildkit archs ...)"`` exports the variables: a child process sees them (issue 27)."""
    child = "import os; print(os.environ['PYTORCH_ROCM_ARCH'], os.environ['GPU_ARCHS'])"
    script = f'eval "$("$PY" -m buildkit archs --rocm 6.4 --archs gfx90a,gfx942)" && "$PY" -c "{child}"'
    env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")}
    proc = subprocess.run(
        ["/bin/bash", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={**env, "PY": sys.executable},
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "gfx90a;gfx942 gfx90a;gfx942\n"


def test_github_env_format_is_what_the_runner_reads() -> None:
    out = run("archs", "--rocm", "6.4", "--archs", "gfx90a,gfx942", "--format", "github-env")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["PYTORCH_ROCM_ARCH=gfx90a;gfx942", "GPU_ARCHS=gfx90a;gfx942"]
