"""Refused wheels kept apart (``<out>/.refused/<job-id>/``, ``--keep-refused DIR``) and recipe
waivers in ``build``, around the stand-ins of tests/unit/test_build_job.py (no engine, no compiler:
cibuildwheel writes a small wheel made from the staged source).

Where the gate matters it is the real one (``gating.gate_wheel``): the stand-in wheel has no GPU
code, so a job requesting gfx90a is refused by ``gfx-arch``, which ``buildkit check`` on the kept
wheel must find again, and which a recipe waiver accepts. The move itself (the same file system,
renamed into place; another file system, copied), the replacement of an older refusal and the
sweep of debris are tested here too; tests/docker/test_build_e2e.py does it on a real build."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from buildkit import manifest
from buildkit.building import gating, quarantine, staging, summary
from buildkit.building import job as build_job
from buildkit.building.job import JobResult
from buildkit.building.steps import gate as gate_step
from buildkit.building.steps import regression as regression_step
from buildkit.cli import main
from buildkit.compare.baseline import RegressionCheck
from buildkit.compare.diff import Baseline
from buildkit.errors import PublishRefused
from buildkit.gate.rules.regression import REGRESSION
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.publish.refusal import collect
from buildkit.publish.run import publish
from buildkit.publish.target import parse_target
from buildkit.recipe import Recipe, load_recipe
from tests.unit.test_build_job import JOB, RECIPE, Client, Harness, Image, _dead_pid, make_harness

GFX = "archs gfx90a requested but the wheel has no HIP object or code object"


@pytest.fixture
def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Harness:
    return make_harness(tmp_path, monkeypatch)


def real_gate(h: Harness) -> None:
    h.monkeypatch.setattr(gate_step, "gate_wheel", gating.gate_wheel)


def recipe_with(h: Harness, gate: str = "", name: str = "recipe.yaml") -> tuple[Recipe, Job]:
    path = h.tmp / name
    path.write_text(RECIPE.format(limit="20MiB") + gate, encoding="utf-8")
    recipe = load_recipe(path)
    return recipe, expand(recipe, env={}).jobs[0]


def kept(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- the refused wheel kept
def test_a_refused_wheel_is_kept_with_its_reports_and_check_finds_the_same(
    h: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    real_gate(h)
    recipe, job = recipe_with(h)
    result = h.build(recipe, job)
    assert result.status == "gate-failed", result.message
    folder = h.out / ".refused" / JOB
    wheel = folder / "demo_kernels-1.0+rocm5.7-cp313-cp313-manylinux_2_41_x86_64.whl"
    assert kept(folder) == sorted(
        [wheel.name, f"{wheel.name}.check.json", f"{wheel.name}.check.txt", f"{wheel.name}.refused.json"]
    )
    assert result.refused == wheel
    assert not (h.out / JOB).exists()
    assert sorted(p.name for p in h.out.iterdir()) == [".refused"]  # no staging, no swap folder
    assert kept(h.out / ".refused") == [JOB]
    assert not list(h.out.rglob("*.manifest.json"))
    # the job's failure message says where it is and how to examine it
    command = f"buildkit check {wheel} --recipe {recipe.display_path} --job {JOB}"
    assert result.examine == command
    assert f"refused wheel kept in {wheel} (never published)" in result.message
    assert f"examine it: {command}" in result.message

    record = json.loads(manifest.refused_path(wheel).read_text())
    assert record["schema"] == "rocm-buildkit/refused" and record["refused_by"] == "gate"
    assert record["wheel"]["sha256"] == manifest.sha256_file(wheel)
    assert record["errors"] == [f"[gfx-arch] {GFX}"]
    assert record["verdict"]["passed"] is False
    assert (record["recipe"]["sha256"], record["job"]["id"]) == (recipe.sha256, JOB)
    assert f"ERROR [gfx-arch] {GFX}" in (folder / f"{wheel.name}.check.txt").read_text()

    # `buildkit check` on the kept wheel, with the recipe and job: exit 7, the same finding, the
    # same JSON report as the one kept beside it
    code, out, _ = cli(capsys, "check", str(wheel), "--recipe", str(recipe.path), "--job", JOB, "--json")
    assert code == 7
    assert json.loads(out) == json.loads((folder / f"{wheel.name}.check.json").read_text())
    code, out, _ = cli(capsys, "check", str(wheel), "--recipe", str(recipe.path), "--job", JOB)
    assert code == 7 and f"  ERROR [gfx-arch] {GFX}" in out.splitlines()

    # publish never sees it: .refused is a dot-folder, and an empty batch says where the refused are
    assert collect(h.out) == []
    with pytest.raises(
        PublishRefused, match=r"no wheels to publish .*1 wheel\(s\) the gate refused are kept"
    ):
        publish(h.out, parse_target(str(h.tmp / "index")))
    assert not (h.tmp / "index" / "simple").exists()


def test_a_keep_refused_folder_inside_the_publish_tree_is_refused_by_name(h: Harness) -> None:
    """``--keep-refused dist/refused``: a plain folder publish collects; its wheel has no manifest,
    its refusal record is named, and that one wheel refuses the whole batch."""
    real_gate(h)
    good, good_job = recipe_with(h, "gate:\n  waive:\n    - {rule: gfx-arch, reason: CPU only}\n", "ok.yaml")
    assert h.build(good, good_job).status == "passed"  # a publishable wheel in dist/<job>
    recipe, job = recipe_with(h)
    refused = h.out / "refused"
    options = build_job.BuildOptions(  # another --out: this refusal must not drop dist/<job>
        out_dir=h.tmp / "other",
        log_dir=h.tmp / "logs",
        ca_bundle=None,
        source_date_epoch=1,
        keep_refused=refused,
    )
    result = build_job.build_one(recipe, job, options, **h_kwargs(h))
    assert result.status == "gate-failed" and result.refused is not None
    assert result.refused.parent == refused / JOB
    assert not (h.tmp / "other" / ".refused").exists()
    wheels = collect(h.out)
    assert result.refused in wheels and len(wheels) == 2
    with pytest.raises(
        PublishRefused
    ) as info:  # the gate runs again with the good recipe's job's configuration
        publish(h.out, parse_target(str(h.tmp / "index")), recipe=good)
    text = str(info.value)
    assert "publish refused: 1 of 2 wheel(s); nothing was published" in text
    assert (
        f"  {result.refused}: the gate refused this wheel in `buildkit build` "
        f"({result.refused.name}.refused.json: [gfx-arch] {GFX}); a refused wheel is kept only to be "
        f"examined and is never published: move {refused / JOB} out of the publish tree"
    ) in text
    assert not (h.tmp / "index").exists()


def h_kwargs(h: Harness) -> dict[str, Any]:
    """What :meth:`Harness.build` passes to ``build_one`` besides the recipe, job and options."""
    return {"client": Client(h.engine), "image": Image(), "source": h.source, "echo": h.echoed.append}


def test_a_newer_refusal_replaces_the_older_and_a_pass_removes_it(h: Harness) -> None:
    recipe, job = h.recipe(limit="10B")  # the stand-in gate: refused for its size
    first = h.build(recipe, job)
    assert first.status == "gate-failed" and first.refused is not None
    old = manifest.sha256_file(first.refused)
    (h.source / "pkg" / "kernel.hip").write_text("__global__ void k6() {}\n")  # other bytes
    second = h.build(recipe, job)
    assert second.refused == first.refused
    folder = h.out / ".refused" / JOB
    assert len(list(folder.glob("*.whl"))) == 1
    new = manifest.sha256_file(second.refused)
    assert new != old
    assert json.loads(manifest.refused_path(second.refused).read_text())["wheel"]["sha256"] == new
    assert kept(h.out / ".refused") == [JOB]  # no .incoming / .previous left beside it

    passing, passing_job = h.recipe()
    assert h.build(passing, passing_job).status == "passed"
    assert not folder.exists()
    assert any("superseded by this passing build" in line for line in h.echoed), h.echoed


def test_a_wheel_on_another_file_system_is_copied(h: Harness) -> None:
    recipe, job = h.recipe(limit="10B")
    real_replace = os.replace

    def cross_device(src: Any, dst: Any) -> None:
        if str(src).endswith(".whl") and Path(src).parent.name == "wheelhouse":
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_replace(src, dst)

    h.monkeypatch.setattr(quarantine.os, "replace", cross_device)
    result = h.build(recipe, job)
    assert result.refused is not None and result.refused.is_file()
    record = json.loads(manifest.refused_path(result.refused).read_text())
    assert record["wheel"]["sha256"] == manifest.sha256_file(result.refused)


def test_a_quarantine_that_cannot_be_written_leaves_nothing_and_says_so(h: Harness) -> None:
    recipe, job = h.recipe(limit="10B")
    blocker = h.tmp / "not-a-folder"
    blocker.write_text("x")
    options = build_job.BuildOptions(
        out_dir=h.out, log_dir=h.tmp / "logs", ca_bundle=None, source_date_epoch=1, keep_refused=blocker
    )
    result = build_job.build_one(recipe, job, options, **h_kwargs(h))
    assert result.status == "gate-failed" and result.refused is None and result.examine is None
    assert "the refused wheel could not be kept: cannot keep the refused wheel" in result.message
    assert blocker.read_text() == "x"
    assert sorted(p.name for p in h.out.iterdir()) == []  # no staging, no incoming folder


def test_verify_s_throwaway_rebuild_keeps_no_refused_wheel(h: Harness) -> None:
    recipe, job = h.recipe(limit="10B")
    options = build_job.BuildOptions(
        out_dir=h.out, log_dir=h.tmp / "logs", ca_bundle=None, source_date_epoch=1, quarantine=False
    )
    result = build_job.build_one(recipe, job, options, **h_kwargs(h))
    assert result.status == "gate-failed" and result.refused is None
    assert "kept" not in result.message
    assert list(h.out.iterdir()) == []


def test_a_keep_refused_folder_inside_the_source_is_not_staged(h: Harness) -> None:
    recipe, job = h.recipe(limit="10B")
    options = build_job.BuildOptions(
        out_dir=h.out,
        log_dir=h.tmp / "logs",
        ca_bundle=None,
        source_date_epoch=1,
        keep_refused=h.source / "kept",
    )
    staged: list[list[str]] = []
    h.cibuildwheel = lambda src, _out: staged.append(sorted(p.name for p in src.iterdir()))
    for _ in range(2):
        assert build_job.build_one(recipe, job, options, **h_kwargs(h)).status == "gate-failed"
    assert (h.source / "kept" / JOB).is_dir()
    assert staged == [[".buildkit", "pkg"]] * 2  # .buildkit: the hermetic build's wheelhouse


def test_the_debris_sweep_keeps_the_quarantine(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    (out / ".refused" / JOB).mkdir(parents=True)
    (out / ".refused" / JOB / "w.whl").write_text("w")
    dead = _dead_pid()
    (out / ".refused" / f".{JOB}.incoming-{dead}-ab12").mkdir()  # a build killed mid-quarantine
    assert staging.sweep_debris(out, lambda _line: None) == []
    assert (out / ".refused" / JOB / "w.whl").read_text() == "w"
    # the quarantine sweeps its own folder before it swaps
    incoming = tmp_path / "w2.whl"
    incoming.write_text("w2")
    quarantine.quarantine(
        incoming, out / ".refused" / JOB, report="r", report_json={}, record={}, echo=lambda _line: None
    )
    assert kept(out / ".refused") == [JOB]
    assert kept(out / ".refused" / JOB) == [
        "w2.whl",
        "w2.whl.check.json",
        "w2.whl.check.txt",
        "w2.whl.refused.json",
    ]


# --------------------------------------------------------------------------- waivers in build
def test_a_waived_finding_passes_the_job_and_the_manifest_and_summary_show_it(h: Harness) -> None:
    real_gate(h)
    recipe, job = recipe_with(
        h, "gate:\n  waive:\n    - rule: gfx-arch\n      reason: a CPU-only test package\n"
    )
    result = h.build(recipe, job)
    assert result.status == "passed", result.message
    assert (result.gate, result.errors, result.waived) == ("PASS", 0, 1)
    verdict = manifest.read(h.wheel_of())["verdict"]  # type: ignore[arg-type]
    assert verdict["passed"] is True
    [finding] = verdict["findings"]
    assert (finding["rule"], finding["severity"], finding["message"]) == ("gfx-arch", "error", GFX)
    assert finding["waived"]["reason"] == "a CPU-only test package"
    assert finding["waived"]["line"] == 12 and finding["waived"]["at"] == "gate.waive[0]"
    lines = summary.render_summary([result], recipe="recipe.yaml", out_dir=h.out, cwd=h.tmp).splitlines()
    assert lines[1].endswith("PASS (0 errors, 1 waived)"), lines
    assert "  waived    gate.waive[0] (gfx-arch): 1 finding waived: a CPU-only test package" in lines
    # up to date: the same, gated again
    again = h.build(recipe, job)
    assert (again.status, again.waived, again.waivers) == ("up-to-date", 1, result.waivers)


def test_an_unused_waiver_refuses_the_job(h: Harness) -> None:
    real_gate(h)
    recipe, job = recipe_with(
        h, "gate:\n  waive:\n    - {rule: gfx-arch, reason: CPU only}\n    - {rule: rpath, reason: old}\n"
    )
    result = h.build(recipe, job)
    assert result.status == "gate-failed" and (result.errors, result.waived) == (1, 1)
    assert f"[waiver-unused] gate.waive[1] ({recipe.path}:13:7) waives rpath" in result.message
    assert result.refused is not None


def _regression(h: Harness, findings: list[Any]) -> None:
    check = RegressionCheck(
        "https://index.invalid/simple/", Baseline("page", None, None, ()), None, tuple(findings)
    )
    h.monkeypatch.setattr(regression_step, "compare_with_last_release", lambda *_a, **_k: check)


def test_a_regression_waiver_is_judged_after_the_regression_check(h: Harness) -> None:
    gate = (
        "gate:\n  no_regression_against: https://index.invalid/simple/\n"
        "  waive:\n    - {rule: regression, reason: gfx942 is dropped in this release}\n"
    )
    recipe, job = recipe_with(h, gate)
    dropped = REGRESSION.error("gfx target gfx942 gone from the wheel since demo-0.9.whl", symbol="gfx942")
    _regression(h, [dropped])
    result = h.build(recipe, job)
    assert result.status == "passed", result.message
    assert result.waived == 1
    assert result.waivers == (
        "gate.waive[0] (regression): 1 finding waived: gfx942 is dropped in this release",
    )
    regression = manifest.read(h.wheel_of())["regression"]  # type: ignore[arg-type]
    assert regression["passed"] is True
    assert regression["findings"][0]["waived"]["reason"] == "gfx942 is dropped in this release"

    _regression(h, [])  # nothing regresses any more: the waiver is stale
    (h.source / "pkg" / "kernel.hip").write_text("__global__ void k7() {}\n")
    result = h.build(recipe, job)
    assert result.status == "gate-failed"
    assert (
        "ERROR [waiver-unused] gate.waive[0]" in result.message
        and "has no regression finding" in result.message
    )
    assert result.refused is not None
    record = json.loads(manifest.refused_path(result.refused).read_text())
    assert record["refused_by"] == "regression"
    report = result.refused.with_name(result.refused.name + ".check.txt").read_text()
    assert "regression check against no earlier release (https://index.invalid/simple/):" in report
    assert "  ERROR [waiver-unused] gate.waive[0]" in report
    assert result.examine is not None and result.examine.startswith(
        "buildkit diff --against-index https://index.invalid/simple/ "
    )


def test_summary_of_a_refused_job_names_the_kept_wheel_and_how_to_examine_it(tmp_path: Path) -> None:
    wheel = tmp_path / "dist" / ".refused" / JOB / "demo-1.0-cp313-cp313-manylinux_2_41_x86_64.whl"
    command = f"buildkit check dist/.refused/{JOB}/{wheel.name} --recipe r.yaml --job {JOB}"
    result = JobResult(JOB, "gate-failed", None, 3.0, gate="FAIL", errors=1, refused=wheel, examine=command)
    lines = summary.render_summary(
        [result], recipe="r.yaml", out_dir=tmp_path / "dist", cwd=tmp_path
    ).splitlines()
    assert lines[2:] == [
        f"  refused   dist/.refused/{JOB}/{wheel.name} (kept apart, never published)",
        f"  examine   {command}",
    ]


def test_publish_names_only_the_unwaived_errors_of_a_failed_verdict(tmp_path: Path) -> None:
    from tests.helpers.wheels_for_publish import make_wheel, public_key_file

    waived = {"rule": "size", "severity": "error", "message": "wheel is 2 MiB", "waived": {"reason": "ok"}}
    failing = {"rule": "rpath", "severity": "error", "message": "absolute RUNPATH /tmp/build", "waived": None}
    dist = tmp_path / "dist"
    bad = make_wheel(
        dist / "a", "bad-1.0-py3-none-any.whl", verdict={"passed": False, "findings": [waived, failing]}
    )
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(tmp_path / "idx")))
    assert (
        f"{bad}: the gate failed on this wheel (manifest verdict.passed is not true): absolute RUNPATH"
        in str(info.value)
    )
    assert "wheel is 2 MiB" not in str(info.value)
    # a passing verdict with waived findings is published
    dist2 = tmp_path / "dist2"
    make_wheel(dist2 / "a", "ok-1.0-py3-none-any.whl", verdict={"passed": True, "findings": [waived]})
    key = public_key_file(tmp_path / "publisher")  # the gate runs again with the signed configuration
    assert [o.status for o in publish(dist2, parse_target(str(tmp_path / "idx")), public_key=key)] == [
        "published"
    ]


def test_the_examine_command_reproduces_the_build_s_gate(h: Harness, tmp_path: Path) -> None:
    """With the recipe and job; with --archs too when the build was given other archs (check would
    gate with the recipe's otherwise); a regression is examined with diff against the index."""
    recipe, _job = h.recipe()
    wheel = tmp_path / "my dist" / "w.whl"
    plain = expand(recipe, env={}).jobs[0]
    assert (
        quarantine.examine_command(wheel, "r.yaml", plain)
        == f"buildkit check '{wheel}' --recipe r.yaml --job {JOB}"
    )
    narrowed = expand(recipe, env={}, cli_archs="gfx90a:xnack-").jobs[0]
    assert quarantine.examine_command(wheel, "r.yaml", narrowed).endswith(
        f"--job {JOB} --archs gfx90a:xnack-"
    )
    assert quarantine.examine_command(wheel, "r.yaml", plain, regression_index="file:///i/simple/") == (
        f"buildkit diff --against-index file:///i/simple/ '{wheel}' --recipe r.yaml --job {JOB} "
        "--fail-on-regression"
    )
