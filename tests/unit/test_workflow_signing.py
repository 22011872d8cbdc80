"""Issue 38: the reusable pipeline (.github/workflows/buildkit.yml) signs each wheel's attestation with
Sigstore when the caller asks (``sign: sigstore``), and its publish job verifies every bundle before
``buildkit publish``; with the caller's BUILDKIT_PUBLIC_KEY, publish verifies the ed25519 attestations.

Fulcio, Rekor and GitHub's OIDC token are not reachable here: the workflow's structure (jobs, order,
permissions, the pinned ``sigstore`` CLI) is checked, and its scripts run with what can run locally
(the predicate extraction on a real attestation, the publish step with a recording ``buildkit``).
actionlint and zizmor check the file in tests/unit/test_workflows.py.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.wheels_for_publish import make_wheel

PIPELINE = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "buildkit.yml"
PIN = re.compile(r"python -m pip install sigstore==\d+\.\d+\.\d+$")


def _jobs() -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(PIPELINE.read_text(), Loader=yaml.BaseLoader)
    return dict(data["jobs"])


def _index(steps: list[dict[str, Any]], needle: str) -> int:
    (found,) = [i for i, s in enumerate(steps) if needle in s.get("run", "") or needle in json.dumps(s)]
    return found


def test_the_caller_opts_in_and_only_the_sign_job_gets_an_oidc_token() -> None:
    data: dict[str, Any] = yaml.load(PIPELINE.read_text(), Loader=yaml.BaseLoader)
    sign_input = data["on"]["workflow_call"]["inputs"]["sign"]
    assert sign_input["default"] == "" and "sigstore" in sign_input["description"]
    jobs = data["jobs"]
    assert jobs["sign"]["permissions"] == {"contents": "read", "id-token": "write"}
    others = [
        name for name, job in jobs.items() if "id-token" in job.get("permissions", {}) and name != "sign"
    ]
    assert others == []
    assert jobs["sign"]["needs"] == ["gate"]
    assert "inputs.sign == 'sigstore'" in jobs["sign"]["if"]
    assert "needs.gate.result == 'success'" in jobs["sign"]["if"]


def test_the_sign_job_attests_every_wheel_and_hands_the_bundles_on() -> None:
    steps = _jobs()["sign"]["steps"]
    install = _index(steps, "pip install sigstore")
    assert PIN.search(steps[install]["run"].strip()), steps[install]["run"]
    download = _index(steps, "wheel-*")
    attest = _index(steps, "sigstore attest")
    upload = _index(steps, "sigstore-bundles")
    assert install < attest and download < attest < upload
    script = steps[attest]["run"]
    assert "--predicate-type https://slsa.dev/provenance/v1" in script
    assert '--bundle "sigstore/$rel.sigstore.json" "$wheel"' in script
    assert steps[upload]["with"]["path"] == "sigstore/"
    assert steps[upload]["with"]["if-no-files-found"] == "error"


def test_publish_verifies_every_bundle_before_publishing() -> None:
    jobs = _jobs()
    publish = jobs["publish"]
    assert "sign" in publish["needs"]
    assert "(inputs.sign != 'sigstore' || needs.sign.result == 'success')" in publish["if"]
    steps = publish["steps"]
    bundles = _index(steps, '"name": "sigstore-bundles"')
    install = _index(steps, "pip install sigstore")
    verify = _index(steps, "sigstore verify github")
    published = _index(steps, "buildkit publish")
    assert bundles < install < verify < published
    for i in (bundles, install, verify):
        assert steps[i]["if"] == "inputs.sign == 'sigstore'"
    assert (
        steps[install]["run"] == _jobs()["sign"]["steps"][_index(jobs["sign"]["steps"], "pip install")]["run"]
    )
    script = steps[verify]["run"]
    assert steps[verify]["env"]["CERT_IDENTITY"] == "https://github.com/${{ job.workflow_ref }}"
    for flag in (
        '--cert-identity "$CERT_IDENTITY"',
        '--repository "$GITHUB_REPOSITORY"',
        '--sha "$GITHUB_SHA"',
        '--bundle "sigstore/${wheel#dist/}.sigstore.json" "$wheel"',
    ):
        assert flag in script
    assert "for wheel in dist/*/*.whl" in script  # every wheel: one without a bundle fails


def test_the_sign_step_takes_the_predicate_the_build_wrote(tmp_path: Path) -> None:
    """The sign step's Python (the predicate of WHEEL.intoto.json for `sigstore attest`) on a real
    attestation written as ``build`` writes it."""
    steps = _jobs()["sign"]["steps"]
    script = steps[_index(steps, "sigstore attest")]["run"]
    match = re.search(r"<<'EOF'\n(.*?)\n\s*EOF\n", script, re.S)
    assert match, "the sign step's Python was not found"
    code = "\n".join(line.removeprefix("          ") for line in match.group(1).splitlines())
    wheel = make_wheel(tmp_path / "dist" / "job")
    attestation = wheel.with_name(wheel.name + ".intoto.json")
    out = tmp_path / "predicate.json"
    subprocess.run([sys.executable, "-c", code, str(attestation), str(out)], check=True, timeout=60)
    statement = json.loads(base64.b64decode(json.loads(attestation.read_text())["payload"]))
    assert json.loads(out.read_text()) == statement["predicate"]
    assert statement["predicateType"] == "https://slsa.dev/provenance/v1"


def _run_publish_step(tmp_path: Path, public_key: str) -> list[str]:
    """The publish step's script with a ``buildkit`` that records its arguments; returns them."""
    steps = _jobs()["publish"]["steps"]
    script = steps[_index(steps, "buildkit publish")]["run"]
    fake = tmp_path / "bin" / "buildkit"
    fake.parent.mkdir()
    fake.write_text(
        '#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGS"\necho published > publish.log\n'
        'echo \'{"target": {"kind": "pypi", "location": "https://upload.pypi.org/legacy/"}}\'\n'
    )
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fake.parent}:{os.environ['PATH']}",
        "ARGS": str(tmp_path / "args"),
        "PUBLIC_KEY": public_key,
        "RECIPE": "repo/r.yaml",
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
    }
    subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, check=True, timeout=60)
    return (tmp_path / "args").read_text().splitlines()


def test_publish_verifies_the_ed25519_attestations_with_the_callers_key(tmp_path: Path) -> None:
    key = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----"
    args = _run_publish_step(tmp_path, key)
    assert args[:4] == ["publish", "dist", "--recipe", "repo/r.yaml"]
    assert args[4:6] == ["--public-key", str(tmp_path / "buildkit.pub")]
    assert (tmp_path / "buildkit.pub").read_text() == key + "\n"


def test_publish_without_a_key_publishes_with_the_recipe_alone(tmp_path: Path) -> None:
    args = _run_publish_step(tmp_path, "")
    assert "--public-key" not in args and args[:4] == ["publish", "dist", "--recipe", "repo/r.yaml"]


def test_every_build_job_signs_with_the_callers_key_before_it_builds(tmp_path: Path) -> None:
    data: dict[str, Any] = yaml.load(PIPELINE.read_text(), Loader=yaml.BaseLoader)
    assert data["on"]["workflow_call"]["secrets"]["signing-key"]["required"] == "false"
    builds = [name for name, job in _jobs().items() if any(s.get("id") == "build" for s in job["steps"])]
    assert sorted(builds) == ["build-0", "build-1"]
    for name in builds:
        steps = _jobs()[name]["steps"]
        key_step = _index(steps, "BUILDKIT_SIGNING_KEY")
        assert key_step < [s.get("id") for s in steps].index("build"), name
        assert steps[key_step]["env"] == {"SIGNING_KEY": "${{ secrets.signing-key }}"}
    # the step's script, run: with a key, a private file the build step's environment names; without, nothing
    script = _jobs()["build-0"]["steps"][_index(_jobs()["build-0"]["steps"], "BUILDKIT_SIGNING_KEY")]["run"]
    for key in ("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI\n-----END PRIVATE KEY-----", ""):
        runner, env_file = tmp_path / f"runner{len(key)}", tmp_path / f"env{len(key)}"
        runner.mkdir()
        env_file.write_text("")
        environ = {**os.environ, "SIGNING_KEY": key, "RUNNER_TEMP": str(runner), "GITHUB_ENV": str(env_file)}
        subprocess.run(["bash", "-e", "-c", script], env=environ, check=True)
        written = runner / "buildkit-signing.pem"
        if key:
            assert env_file.read_text() == f"BUILDKIT_SIGNING_KEY={written}\n"
            assert written.read_text() == key + "\n" and written.stat().st_mode & 0o777 == 0o600
        else:
            assert env_file.read_text() == "" and not written.exists()
