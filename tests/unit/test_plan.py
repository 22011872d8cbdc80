"""Plans: job ids, zip/exclude, skipped combinations, versions, renderers and golden files.

Golden files live in tests/data/golden/; regenerate them with
``BUILDKIT_REGEN_GOLDEN=1 python -m pytest tests/unit/test_plan.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from buildkit.errors import ArchError, DockerUnavailable, RecipeError, UnknownJob, UsageError
from buildkit.plan.expansion import expand, job_id
from buildkit.plan.models import Plan
from buildkit.plan.render import github_matrix, render_github, render_json, render_table
from buildkit.policy import version_tuple
from buildkit.recipe import load_recipe, parse_recipe

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "recipes"
DATA = ROOT / "tests" / "data"
GOLDEN = DATA / "golden"
REGEN = os.environ.get("BUILDKIT_REGEN_GOLDEN") == "1"

# The environment the golden plans are made in: fixed, so they do not depend on this machine.
GOLDEN_ENV = {"PYTORCH_ROCM_ARCH": "gfx90a;gfx942;gfx950;gfx1100"}
GOLDEN_CASES = {
    "aiter": RECIPES / "aiter.yaml",
    "reference": RECIPES / "reference-trixie.yaml",
    "matrix": DATA / "recipes" / "matrix.yaml",
    "runtime": DATA / "recipes" / "runtime.yaml",
}

# What the seeded images' libraries define, as `buildkit ceilings` read them (Docker cannot run in
# unit tests, so plans read these through an injected reader; tests/docker/test_plan_from_image.py
# checks each value against the real images). "example/no-libstdcxx:1" stands for an image without
# libstdc++ (tests/docker/test_ceilings_docker.py builds a real one).
RECORDED_CEILINGS: dict[str, dict[str, str]] = {
    "debian:bookworm-slim": {"GLIBC": "2.36", "GLIBCXX": "3.4.30", "CXXABI": "1.3.13", "GCC": "12.0.0"},
    "debian:trixie-slim": {"GLIBC": "2.41", "GLIBCXX": "3.4.33", "CXXABI": "1.3.15", "GCC": "14.0.0"},
    "example/no-libstdcxx:1": {"GLIBC": "2.36", "GCC": "12.0.0"},
}


class RecordedReader:
    """A stand-in for buildkit.image.ceilings.ceilings_from_images over RECORDED_CEILINGS (same contract:
    the minimum across the images, a prefix absent from any image left out, a missing image is
    DockerUnavailable); it counts the calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, images: Sequence[str]) -> dict[str, str]:
        self.calls.append(tuple(images))
        readings = []
        for image in images:
            if image not in RECORDED_CEILINGS:
                raise DockerUnavailable(f"image {image!r} is not in the Docker engine's local images")
            readings.append(RECORDED_CEILINGS[image])
        out = {}
        for prefix in ("GLIBC", "GLIBCXX", "CXXABI", "GCC"):
            if all(prefix in r for r in readings):
                out[prefix] = min((r[prefix] for r in readings), key=lambda v: version_tuple(v) or ())
        return out


RENDER = {"table": render_table, "json": render_json, "github": render_github}


def _no_agents() -> list[str]:
    return []


def _plan(path: Path, env: dict[str, str] | None = None) -> Plan:
    return expand(
        load_recipe(path),
        env=GOLDEN_ENV if env is None else env,
        enumerator=_no_agents,
        ceilings_reader=RecordedReader(),
    )


MINIMAL = """\
name: demo
source: {path: ../csrc}
version: {base: "1.0", local: "rocm{rocm}"}
python: ["3.12", "3.13"]
rocm: ["6.4"]
archs: {list: [gfx90a]}
manylinux: {policy: manylinux_2_28}
image: manylinux_2_28-rocm
"""
#: excluding the ROCm runtime at repair (without it the plan warns that repair would graft it)
EXCLUDE_ROCM = "repair: {exclude: {sets: [rocm]}}\n"


def _parse(text: str, tmp_path: Path) -> Plan:
    return expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}, enumerator=_no_agents)


# ---------------------------------------------------------------- the "done when"


def test_aiter_plan_is_the_eight_jobs() -> None:
    plan = _plan(RECIPES / "aiter.yaml")
    assert [j.id for j in plan.jobs] == [
        f"cp{py}-{pair}"
        for py in ("310", "311", "312", "313")
        for pair in ("rocm6.4-torch2.9", "rocm7.2-torch2.10")
    ]
    assert plan.skipped == ()
    job = plan.job("cp312-rocm7.2-torch2.10")
    assert job.version == "0.1.12.post2+rocm7.2.manylinux.2.28"
    # aiter's real wheel: amd_aiter-0.1.12.post2+rocm7.2.manylinux.2.28-cp312-cp312-manylinux_2_28_x86_64.whl
    assert f"amd_aiter-{job.version}-{job.cp_tag}-{job.cp_tag}-{job.platform_tag}.whl" == (
        "amd_aiter-0.1.12.post2+rocm7.2.manylinux.2.28-cp312-cp312-manylinux_2_28_x86_64.whl"
    )
    assert job.torch_index_url == "https://download.pytorch.org/whl/rocm7.2"
    assert job.torch_requirement == "torch==2.10.*"
    # torch 2.9 pinned without index_url: buildkit's ROCm data names the 6.4 index serving it
    old = plan.job("cp310-rocm6.4-torch2.9")
    assert old.torch_index_url == "https://download.pytorch.org/whl/rocm6.4"
    assert old.archs.pytorch_rocm_arch() == "gfx942"  # ROCm 6.4 predates gfx950: dropped, and noted
    assert "ROCm 6.4: gfx950: dropped: needs ROCm >= 7.0, pinned 6.4" in plan.notes
    assert not [n for n in plan.notes if "index_url" in n]  # every torch index agrees with the data
    assert job.ceilings["GLIBC"] == "2.28" and job.ceilings["CXXABI"] == "1.3.11"
    assert job.image_profile == "manylinux_2_28-rocm"
    assert job.archs.pytorch_rocm_arch() == "gfx942;gfx950"
    assert job.env["PYTORCH_ROCM_ARCH"] == "gfx942;gfx950"
    assert job.env["PREBUILD_KERNELS"] == "1"
    assert "librocblas.so*" in job.exclude_globs and "libmscclpp*.so*" in job.exclude_globs


def test_reference_plan() -> None:
    plan = _plan(RECIPES / "reference-trixie.yaml")
    (job,) = plan.jobs
    assert job.id == "cp313-rocm5.7"
    assert job.torch is None and job.torch_index_url is None
    # Debian's LLVM 17 accepts gfx942 although AMD's ROCm 5.7 does not
    assert [str(t) for t in job.archs.kept] == ["gfx908", "gfx90a", "gfx942"]
    assert job.policy == "manylinux_2_41"
    assert job.image_profile == "debian-rocm"
    assert job.version == "0.1.0+rocm5.7.manylinux.2.41"


def test_job_ids() -> None:
    assert job_id("3.12", "7.2", "2.10") == "cp312-rocm7.2-torch2.10"
    assert job_id("3.13", "5.7", None) == "cp313-rocm5.7"
    assert job_id("3.13", "5.7", None, [("PREBUILD_KERNELS", "1"), ("OPT", "a b/c")]) == (
        "cp313-rocm5.7-prebuild_kernels1-opta_b_c"
    )


# ---------------------------------------------------------------- matrix semantics


def test_product_without_zip(tmp_path: Path) -> None:
    text = MINIMAL.replace('rocm: ["6.4"]', 'rocm: ["6.4", "7.0"]')
    plan = _parse(text, tmp_path)
    assert [j.id for j in plan.jobs] == ["cp312-rocm6.4", "cp312-rocm7.0", "cp313-rocm6.4", "cp313-rocm7.0"]


def test_zip_exclude_python_range_and_axes() -> None:
    plan = _plan(DATA / "recipes" / "matrix.yaml")
    assert len(plan.jobs) == 24
    reasons = {s.id: s.reason for s in plan.skipped}
    assert reasons["cp310-rocm7.2-torch2.10-prebuild_kernels0"].startswith(
        "excluded by matrix.exclude[0]: torch"
    )
    assert reasons["cp314-rocm6.4-torch2.8-prebuild_kernels0"] == (
        "torch 2.8 ships no wheels for Python 3.14 (torch[0].python is '<3.14,>=3.9')"
    )
    assert reasons["cp314-rocm7.0-torch2.9-prebuild_kernels1"] == "excluded by matrix.exclude[1]"
    # zip: never rocm 6.4 with torch 2.9
    assert not [j for j in plan.jobs if j.rocm == "6.4" and j.torch != "2.8"]
    job = plan.job("cp312-rocm6.4-torch2.8-prebuild_kernels1")
    assert job.env["PREBUILD_KERNELS"] == "1" and job.axes == {"PREBUILD_KERNELS": "1"}
    assert job.version == "2.1.0+rocm64.torch28.pk1"  # base version from the git source's tag v2.1.0
    assert job.torch_index_url == "https://download.pytorch.org/whl/rocm6.4"  # from buildkit's ROCm data
    assert job.ceilings["GLIBCXX"] == "3.4.22"
    # archs from the environment, allow-list and ROCm release applied
    assert [str(t) for t in job.archs.kept] == ["gfx90a", "gfx942"]
    assert [str(t) for t in plan.job("cp312-rocm7.0-torch2.9-prebuild_kernels1").archs.kept] == [
        "gfx90a",
        "gfx942",
        "gfx950",
    ]


def test_exclude_matching_nothing_is_an_error(tmp_path: Path) -> None:
    text = (
        MINIMAL.replace('rocm: ["6.4"]', 'rocm: ["6.4", "7.0"]')
        + 'torch:\n  - {version: "2.8", index_url: "https://i.example/a"}\n'
        + '  - {version: "2.9", index_url: "https://i.example/b"}\n'
        + 'matrix:\n  zip: [rocm, torch]\n  exclude:\n    - {rocm: "6.4", torch: "2.9"}\n'
    )
    with pytest.raises(RecipeError) as info:
        _parse(text, tmp_path)
    assert "matrix.exclude[0] (rocm=6.4, torch=2.9) matches no combination" in str(info.value)
    assert (info.value.line, info.value.column) == (15, 7)


def test_unknown_rocm_release_is_positioned(tmp_path: Path) -> None:
    with pytest.raises(RecipeError) as info:
        _parse(MINIMAL.replace('rocm: ["6.4"]', 'rocm: ["6.4", "9.9"]'), tmp_path)
    assert (info.value.line, info.value.column) == (5, 15)
    assert "no data for ROCm 9.9" in str(info.value)


def test_toolchain_must_match_the_release(tmp_path: Path) -> None:
    text = MINIMAL.replace("{list: [gfx90a]}", "{list: [gfx90a], toolchain: debian-trixie}")
    with pytest.raises(RecipeError, match=re.escape("toolchain debian-trixie packages ROCm 5.7, not 6.4")):
        _parse(text, tmp_path)
    text = MINIMAL.replace("{list: [gfx90a]}", "{list: [gfx90a], toolchain: debian-jessie}")
    with pytest.raises(RecipeError, match=re.escape("archs.toolchain: unknown toolchain 'debian-jessie'")):
        _parse(text, tmp_path)


def test_torch_without_a_known_index(tmp_path: Path) -> None:
    text = MINIMAL + 'torch:\n  - {version: "1.13"}\n'
    with pytest.raises(RecipeError, match=re.escape("no index serving torch 1.13 for ROCm 6.4")) as info:
        _parse(text, tmp_path)
    assert info.value.line == 10


def test_no_arch_left_is_an_arch_error(tmp_path: Path) -> None:
    with pytest.raises(ArchError):
        _parse(MINIMAL.replace("[gfx90a]", "[gfx950]"), tmp_path)


def test_git_tag_version_from_a_path_source(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    git = ["git", "-C", str(src), "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (src / "f").write_text("x")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    subprocess.run([*git, "tag", "v3.1.4"], check=True)
    text = MINIMAL.replace("{path: ../csrc}", "{path: src}").replace('base: "1.0"', "from: git-tag")
    plan = _parse(text, tmp_path)
    assert plan.jobs[0].version == "3.1.4+rocm6.4"
    text = text.replace("{path: src}", "{path: nowhere}")
    with pytest.raises(RecipeError, match=re.escape("version.from: git-tag: no tag found in")):
        _parse(text, tmp_path)


def test_duplicate_ids_from_axis_values(tmp_path: Path) -> None:
    text = MINIMAL + 'matrix:\n  axes:\n    OPT: ["a b", "a/b"]\n'
    with pytest.raises(RecipeError, match="share the job id"):
        _parse(text, tmp_path)


# ---------------------------------------------------------------- renderers


def test_github_shards_of_at_most_256(tmp_path: Path) -> None:
    values = ", ".join(f'"{i}"' for i in range(300))
    text = MINIMAL.replace('local: "rocm{rocm}"', 'local: "rocm{rocm}.n{N}"')  # a wheel file per job
    plan = _parse(text + f"matrix:\n  axes:\n    N: [{values}]\n", tmp_path)
    assert len(plan.jobs) == 600
    gh = json.loads(render_github(plan))
    assert gh["job_count"] == 600 and gh["shard_count"] == 3
    assert [len(s["include"]) for s in gh["shards"]] == [256, 256, 88]
    ids = [e["id"] for s in gh["shards"] for e in s["include"]]
    assert ids == [j.id for j in plan.jobs]
    assert [len(s["include"]) for s in github_matrix(plan, 100)["shards"]] == [100] * 6
    with pytest.raises(ValueError):
        github_matrix(plan, 257)


def test_table_lists_skipped_with_reasons() -> None:
    text = render_table(_plan(DATA / "recipes" / "matrix.yaml"))
    assert "24 jobs, 6 skipped" in text
    assert "cp314-rocm6.4-torch2.8-prebuild_kernels0   torch 2.8 ships no wheels for Python 3.14" in text
    assert "ROCm 6.4: gfx950: dropped: needs ROCm >= 7.0" in text


def test_json_is_valid_and_relative() -> None:
    text = render_json(_plan(RECIPES / "reference-trixie.yaml"))
    data = json.loads(text)
    assert data["recipe"]["file"] == "reference-trixie.yaml"
    assert data["recipe"]["source"] == {"path": "../csrc"}
    assert str(ROOT) not in text


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
@pytest.mark.parametrize("fmt", sorted(RENDER))
def test_golden(case: str, fmt: str) -> None:
    text = RENDER[fmt](_plan(GOLDEN_CASES[case]))
    golden = GOLDEN / f"{case}.{fmt}"
    if REGEN:
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"missing {golden}; run with BUILDKIT_REGEN_GOLDEN=1"
    assert text == golden.read_text(encoding="utf-8"), f"{golden} differs; if intended, regenerate"


def test_cli_output_is_byte_identical_and_cwd_independent(tmp_path: Path) -> None:
    """Two runs from different directories with different recipe paths print the same bytes."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")}
    env.update(GOLDEN_ENV)
    # this checkout's code, whatever checkout the editable install points at
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    outputs = []
    for cwd, arg in (
        (ROOT, "tests/data/recipes/matrix.yaml"),
        (tmp_path, str(DATA / "recipes" / "matrix.yaml")),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "buildkit", "plan", "--format", "json", arg],
            cwd=cwd,
            env=env,
            capture_output=True,
            check=True,
        )
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].decode() == (GOLDEN / "matrix.json").read_text(encoding="utf-8")


# ---------------------------------------------------------------- ceilings from runtime images


def _from_image(tmp_path: Path, images: str, policy: str = "manylinux_2_39", extra: str = "") -> str:
    return MINIMAL.replace(
        "manylinux: {policy: manylinux_2_28}",
        f"manylinux:\n  policy: {policy}\n  ceilings:\n    from_image: {images}\n{extra}",
    )


def test_from_image_tightens_to_the_minimum_of_the_images() -> None:
    reader = RecordedReader()
    recipe = load_recipe(DATA / "recipes" / "runtime.yaml")
    plan = expand(recipe, env={}, enumerator=_no_agents, ceilings_reader=reader)
    (job,) = plan.jobs
    # manylinux_2_39 allows GLIBC 2.39, GLIBCXX 3.4.33, CXXABI 1.3.15, GCC 14.0.0; the recipe says
    # GCC 13.0.0; bookworm (the older image) defines GLIBC 2.36, GLIBCXX 3.4.30, CXXABI 1.3.13, GCC 12
    assert recipe.manylinux.ceilings["GLIBC"] == "2.39" and recipe.manylinux.ceilings["GCC"] == "13.0.0"
    assert dict(job.ceilings) == {"CXXABI": "1.3.13", "GCC": "12.0.0", "GLIBC": "2.36", "GLIBCXX": "3.4.30"}
    assert job.ceilings_from_images == ("debian:bookworm-slim", "debian:trixie-slim")
    # one read per image for the whole plan, not per job
    assert reader.calls == [("debian:bookworm-slim",), ("debian:trixie-slim",)]
    data = json.loads(render_json(plan))
    assert data["jobs"][0]["ceilings_from_images"] == ["debian:bookworm-slim", "debian:trixie-slim"]
    assert data["jobs"][0]["ceilings"]["GLIBC"] == "2.36" and data["notes"] == []
    assert "(tightened by from_image debian:bookworm-slim, debian:trixie-slim)" in render_table(plan)
    # and the gate sees those ceilings
    from buildkit.gate.config import GateConfig

    assert GateConfig.from_job(job).ceilings["GLIBCXX"] == "3.4.30"


def test_from_image_never_raises_a_ceiling(tmp_path: Path) -> None:
    """trixie is newer than manylinux_2_28 in every prefix: the policy's ceilings stay."""
    plan = expand(
        parse_recipe(_from_image(tmp_path, "debian:trixie-slim", "manylinux_2_28"), path=tmp_path / "r.yaml"),
        env={},
        ceilings_reader=RecordedReader(),
    )
    assert dict(plan.jobs[0].ceilings) == {
        "CXXABI": "1.3.11",
        "GCC": "7.0.0",
        "GLIBC": "2.28",
        "GLIBCXX": "3.4.24",
    }
    assert plan.jobs[0].ceilings_from_images == ("debian:trixie-slim",)


def test_image_without_libstdcxx_leaves_its_prefixes_and_says_so(tmp_path: Path) -> None:
    text = _from_image(tmp_path, "[debian:trixie-slim, example/no-libstdcxx:1]") + EXCLUDE_ROCM
    plan = expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}, ceilings_reader=RecordedReader())
    job = plan.jobs[0]
    # GLIBC/GCC: the minimum of both images; GLIBCXX/CXXABI: one image defines none, so no version is
    # known safe there and the policy's stay (as buildkit.image.ceilings.minimum_ceilings does)
    assert dict(job.ceilings) == {"CXXABI": "1.3.15", "GCC": "12.0.0", "GLIBC": "2.36", "GLIBCXX": "3.4.33"}
    (note,) = plan.notes
    assert note.startswith("manylinux.ceilings.from_image: example/no-libstdcxx:1 defines no GLIBCXX/CXXABI")
    assert "libstdc++.so.6" in note and "(GLIBCXX 3.4.33, CXXABI 1.3.15)" in note
    table = render_table(plan)
    assert f"\nnote: {note}\n" in table
    assert json.loads(render_json(plan))["notes"] == [note]


def test_without_from_image_docker_is_never_asked(tmp_path: Path) -> None:
    def refuse(images: Sequence[str]) -> dict[str, str]:
        raise AssertionError(f"reader called for {images}")

    plan = expand(
        parse_recipe(MINIMAL + EXCLUDE_ROCM, path=tmp_path / "r.yaml"), env={}, ceilings_reader=refuse
    )
    assert plan.jobs[0].ceilings_from_images == () and plan.notes == ()
    assert plan.jobs[0].ceilings["GLIBC"] == "2.28"


def test_missing_image_is_exit_8_at_the_recipe_position(tmp_path: Path) -> None:
    text = _from_image(tmp_path, "[debian:trixie-slim, example/missing:1]")
    with pytest.raises(DockerUnavailable) as info:
        expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}, ceilings_reader=RecordedReader())
    assert info.value.exit_code == 8
    # line 10 of the recipe, the second list item
    assert str(info.value).startswith(f"{tmp_path / 'r.yaml'}:10:38: manylinux.ceilings.from_image: image ")
    assert "example/missing:1" in str(info.value)


def test_not_a_glibc_image_is_a_recipe_error(tmp_path: Path) -> None:
    def musl(images: Sequence[str]) -> dict[str, str]:
        raise UsageError(f"image {images[0]!r} has no libc.so.6: not a glibc-based image")

    text = _from_image(tmp_path, "alpine:3")
    with pytest.raises(RecipeError) as info:
        expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}, ceilings_reader=musl)
    assert (info.value.line, info.value.column) == (10, 17)
    assert "not a glibc-based image" in info.value.detail


def test_the_commands_reader_is_the_docker_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan layer never reaches the engine itself: without a reader a from_image recipe is a
    caller's bug; the reader ``buildkit plan`` injects asks the Docker engine (here: one that does not
    exist), and the failure names the image's position in the recipe."""
    from buildkit.service.plan import image_ceilings as _read_image_ceilings

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    text = _from_image(tmp_path, "debian:bookworm-slim")
    with pytest.raises(ValueError, match="needs a ceilings_reader"):
        expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={})
    with pytest.raises(DockerUnavailable) as info:
        expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}, ceilings_reader=_read_image_ceilings)
    assert str(info.value).startswith(f"{tmp_path / 'r.yaml'}:10:17: manylinux.ceilings.from_image: ")
    assert "no-engine.sock" in str(info.value)


def test_from_image_plans_are_byte_identical() -> None:
    path = DATA / "recipes" / "runtime.yaml"
    for render in (render_table, render_json, render_github):
        assert render(_plan(path)) == render(_plan(path))


def test_regression_baseline_reaches_every_job(tmp_path: Path) -> None:
    plan = _plan(DATA / "recipes" / "runtime.yaml")
    assert {j.regression_baseline for j in plan.jobs} == {"file:///srv/rocm-buildkit/index/simple/"}
    assert "gate: no regression against the last release in file:///srv/" in render_table(plan)
    plain = _parse(MINIMAL, tmp_path)
    assert plain.jobs[0].regression_baseline is None
    assert json.loads(render_json(plain))["jobs"][0]["regression_baseline"] is None


# ---------------------------------------------------------------- review L1: output is always valid UTF-8


def _plain_recipe(extra: str = "") -> str:
    return (
        "name: demo\n"
        f"source: {{path: {ROOT / 'csrc'}}}\n"
        'version: {base: "1.0"}\n'
        'python: ["3.12"]\n'
        'rocm: ["6.4"]\n'
        "archs: {list: [gfx90a]}\n"
        "manylinux: {policy: manylinux_2_28}\n"
        "image: manylinux_2_28-rocm\n" + extra
    )


@pytest.mark.parametrize("locale", [None, "C"])
@pytest.mark.parametrize("fmt", ["json", "github", "table"])
def test_undecodable_file_name_gives_valid_utf8(tmp_path: Path, fmt: str, locale: str | None) -> None:
    """A recipe named with the byte 0xff used to come out as a raw 0xff (invalid UTF-8)."""
    name = os.fsdecode(b"r\xff.yaml")
    # YAML escapes put lone surrogates in an env value (json) and a torch index URL (github)
    odd = (
        'env: {ODD: "\\udcff\\ud800"}\ntorch: [{version: "2.8", index_url: "https://example.org/\\udcff"}]\n'
    )
    (tmp_path / name).write_text(_plain_recipe(odd))
    env = dict(os.environ)
    if locale is not None:
        env["LC_ALL"] = locale
    outputs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "buildkit", "plan", "--format", fmt, os.fsencode(tmp_path / name)],
            capture_output=True,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]  # byte-identical
    text = outputs[0].decode("utf-8")  # strict: raises on invalid UTF-8
    assert "\xff" not in text
    if fmt == "table":
        assert text.startswith("recipe r\\xff.yaml (demo, sha256 ")
    else:
        data = json.loads(text)
        if fmt == "json":
            assert data["recipe"]["file"] == "r\\xff.yaml"
            assert data["jobs"][0]["env"]["ODD"] == "\udcff\ud800"  # JSON escapes: round-trips
            assert '"ODD":"\\udcff\\ud800"' in text
        else:
            assert data["shards"][0]["include"][0]["torch_index_url"] == "https://example.org/\udcff"


def test_renderers_keep_valid_text_unchanged(tmp_path: Path) -> None:
    plan = expand(parse_recipe(_plain_recipe('env: {NOTE: "café ✓"}\n'), path=tmp_path / "r.yaml"))
    assert '"NOTE":"café ✓"' in render_json(plan)  # non-ASCII stays UTF-8, not \\u escapes


# ---------------------------------------------------------------- review L2: Plan.job for an unknown id


def test_unknown_job_id_lists_the_known_ones(tmp_path: Path) -> None:
    plan = expand(parse_recipe(_plain_recipe(), path=tmp_path / "r.yaml"))
    where = plan.recipe.display_path
    with pytest.raises(UnknownJob) as info:
        plan.job("cp399-rocm6.4")
    assert info.value.exit_code == 2  # the recipe is valid: the id asked for is the mistake
    assert str(info.value) == f"{where}: no job 'cp399-rocm6.4' in the plan of demo; known: cp312-rocm6.4"
    empty = Plan(recipe=plan.recipe, jobs=(), skipped=())
    with pytest.raises(UnknownJob) as info:
        empty.job("cp312-rocm6.4")
    assert str(info.value).endswith("; the plan has no jobs (every combination was skipped)")


def test_importing_plan_loads_no_docker_module() -> None:
    """plan takes its ceilings reader from the caller: importing it (and expanding a recipe without
    from_image) never loads buildkit.image.ceilings or the Docker SDK (a fresh interpreter, so other tests'
    imports do not count)."""
    code = (
        "import sys, buildkit.plan\n"
        "print(sorted(m for m in ('buildkit.image.ceilings', 'docker') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_ceilings_tighten_to_the_lowest_per_prefix() -> None:
    """The plan tightens with buildkit.policy's tighten (the one definition, below the plan and the
    image layer alike)."""
    from buildkit import policy

    base = {"GLIBC": "2.28", "GLIBCXX": "3.4.24", "GCC": "7.0.0"}
    others = ({"GLIBC": "2.36", "GLIBCXX": "3.4.19", "CXXABI": "1.3.7"}, {"GCC": "4.2.0", "GLIBC": "2.17"})
    assert policy.tighten(base, *others) == {
        "GLIBC": "2.17",
        "GLIBCXX": "3.4.19",
        "GCC": "4.2.0",
        "CXXABI": "1.3.7",
    }
