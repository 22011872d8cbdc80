"""Machine output (issue 27): ``--json`` documents follow a schema shipped in ``buildkit/schema/``, and
``publish --json`` / ``verify --json`` print their refusal as JSON on stdout too (the message stays on
stderr, the exit code is the error's); ``plan --json`` and ``archs --json`` are ``--format json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
from referencing import Registry, Resource

from buildkit.cli import cli
from tests.helpers.wheels_for_publish import FAILING, make_wheel, public_key_file

ROOT = Path(__file__).resolve().parents[2]
BASE = "https://rocm-buildkit.invalid/schema/"


def _schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        resources.files("buildkit").joinpath(f"schema/{name}.schema.json").read_text(encoding="utf-8")
    )
    return data


def _validate(document: Any, name: str) -> None:
    registry: Registry[Any] = Registry().with_resources(
        (BASE + f"{n}.schema.json", Resource.from_contents(_schema(n)))
        for n in ("error", "publish", "verify")
    )
    schema = _schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema, registry=registry).validate(document)


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd or ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTORCH_ROCM_ARCH": ""},
        timeout=120,
    )


def test_every_schema_is_valid_and_its_id_names_its_file() -> None:
    names = sorted(p.name for p in resources.files("buildkit").joinpath("schema").iterdir())
    for file in names:
        schema = _schema(file.removesuffix(".schema.json"))
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$id"] == BASE + file
    assert {"error.schema.json", "publish.schema.json", "verify.schema.json", "image-ls.schema.json"} <= set(
        names
    )


def test_publish_success_and_refusal_are_json(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist, "demo-1.0-py3-none-any.whl")
    key = str(public_key_file(tmp_path))  # the builds' signing key: publish runs the gate again
    ok = _cli("publish", str(dist), "--to", str(tmp_path / "idx"), "--public-key", key, "--json")
    assert ok.returncode == 0, ok.stderr
    document = json.loads(ok.stdout)
    _validate(document, "publish")
    assert document["ok"] is True and document["wheels"][0]["status"] == "published"

    make_wheel(dist, "bad-1.0-py3-none-any.whl", verdict=FAILING)
    refused = _cli("publish", str(dist), "--to", str(tmp_path / "idx"), "--public-key", key, "--json")
    assert refused.returncode == 10
    assert "bad-1.0-py3-none-any.whl: the gate failed" in refused.stderr  # stderr as before
    document = json.loads(refused.stdout)
    _validate(document, "publish")
    assert document["ok"] is False and document["command"] == "publish"
    assert document["error"]["kind"] == "PublishRefused" and document["error"]["exit_code"] == 10
    (refusal,) = document["error"]["refusals"]
    assert refusal["wheel"].endswith("bad-1.0-py3-none-any.whl") and "the gate failed" in refusal["reason"]


def test_publish_usage_error_is_json_too(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    proc = _cli("publish", str(tmp_path / "dist"), "--json")
    assert proc.returncode == 2
    document = json.loads(proc.stdout)
    _validate(document, "publish")
    assert document["error"]["message"].startswith("give --to TARGET, --recipe R")


def test_verify_refusal_is_json(tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    make_wheel(tmp_path, wheel.name)
    key = tmp_path / "key.pub"
    key.write_text("not a key\n")
    proc = _cli("verify", str(wheel), "--attestation", "--public-key", str(key), "--json")
    assert proc.returncode not in (0, 1), proc.stderr
    document = json.loads(proc.stdout)
    _validate(document, "verify")
    assert document["command"] == "verify" and document["wheel"] == str(wheel)
    assert document["error"]["exit_code"] == proc.returncode
    assert document["error"]["message"] in proc.stderr


def test_without_json_a_refusal_prints_nothing_on_stdout(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    proc = _cli("publish", str(tmp_path / "dist"), "--to", str(tmp_path / "idx"))
    assert proc.returncode == 10 and proc.stdout == ""


def test_plan_and_archs_take_json() -> None:
    recipe = str(ROOT / "recipes" / "aiter.yaml")
    assert _cli("plan", recipe, "--json").stdout == _cli("plan", recipe, "--format", "json").stdout
    archs = ["archs", "--rocm", "7.2", "--archs", "gfx942"]
    got = _cli(*archs, "--json")
    assert got.returncode == 0, got.stderr
    assert got.stdout == _cli(*archs, "--format", "json").stdout
    assert json.loads(got.stdout)["kept"] == ["gfx942"]
    clash = _cli("plan", recipe, "--json", "--format", "table")
    assert clash.returncode == 2 and "--json is --format json" in clash.stderr


def test_build_json_summary_follows_its_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``buildkit build --json``: the summary's content as JSON (the build itself stood in for: no
    engine in unit tests), the exit code the build's."""
    from buildkit.building.ccache import CacheStats
    from buildkit.building.job import JobResult
    from buildkit.cli import main
    from buildkit.service import build as build_service  # the stage call the command makes

    wheel = tmp_path / "dist" / "cp313-rocm5.7" / "demo-1.0+rocm5.7-cp313-cp313-manylinux_2_41_x86_64.whl"
    results = [
        JobResult(
            "cp313-rocm5.7", "passed", wheel, 12.5, gate="PASS", warnings=1, compiler_cache=CacheStats(3, 1)
        ),
        JobResult(
            "cp314-rocm5.7", "gate-failed", None, 11.0, gate="FAIL", errors=2, refused=tmp_path / "r.whl"
        ),
    ]
    monkeypatch.setattr(build_service, "build_plan", lambda *args, **kwargs: results)
    with pytest.raises(SystemExit) as exit_info:
        main(["build", str(ROOT / "recipes" / "reference.yaml"), "--json", "--out", str(tmp_path / "dist")])
    assert exit_info.value.code == 7  # a gate refusal, as without --json
    document = json.loads(capsys.readouterr().out)
    _validate(document, "build")
    assert document["ok"] is False
    first, second = document["jobs"]
    assert first["wheel"] == str(wheel) and first["manifest"] == str(wheel) + ".manifest.json"
    assert first["compiler_cache"] == {"hits": 3, "misses": 1, "hit_rate": 0.75}
    assert (second["status"], second["gate"], second["errors"], second["wheel"]) == (
        "gate-failed",
        "FAIL",
        2,
        None,
    )


ENVELOPED = {
    "plan": ("plan", "r.yaml", "--json"),
    "archs": ("archs", "--rocm", "7.2", "--archs", "gfx942", "--json"),
    "rocm-ls": ("rocm", "ls", "--json"),
    "rocm-show": ("rocm", "show", "7.2", "--json"),
}
RECIPE = """\
name: demo
source: {path: .}
version: {base: "1.0", local: "rocm{rocm}"}
python: ["3.12"]
rocm: ["6.4", "7.2"]
archs: {list: [gfx90a, gfx942]}
manylinux: {policy: manylinux_2_28}
repair: {exclude: {sets: [rocm]}}
image: manylinux_2_28-rocm
"""


@pytest.mark.parametrize("name", sorted(ENVELOPED))
def test_every_json_document_has_the_envelope_and_a_listed_schema(tmp_path: Path, name: str) -> None:
    """Issue 36: plan, archs, rocm ls and rocm show --json carried no schema/schema_version and had no entry
    in `buildkit schema --list`."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "r.yaml").write_text(RECIPE)
    proc = _cli(*ENVELOPED[name], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert (document["schema"], document["schema_version"]) == (f"rocm-buildkit/{name}", 1)
    _validate(document, name)
    assert name in _cli("schema", "--list").stdout.split()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("plan", "bad.yaml", "--json"), 3),
        (("archs", "--rocm", "9.9", "--archs", "gfx942", "--json"), 2),
        (("rocm", "show", "9.9", "--json"), 2),
    ],
)
def test_a_failure_with_json_is_an_error_document_on_stdout(
    tmp_path: Path, args: tuple[str, ...], code: int
) -> None:
    """Issue 36: on failure these printed nothing on stdout."""
    (tmp_path / "bad.yaml").write_text("name: demo\n")
    proc = _cli(*args, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    document = json.loads(proc.stdout)
    _validate(document, "error")
    assert document["command"] == (" ".join(args[:2]) if args[0] == "rocm" else args[0])
    assert document["error"]["exit_code"] == code and document["error"]["message"] in proc.stderr


@pytest.mark.parametrize(
    ("args", "command", "code"),
    [
        (("build", "nope.yaml", "--json"), "build", 3),  # the recipe is refused before any job
        (("diff", "a.whl", "b.whl", "--json"), "diff", 6),
        (("ceilings", "NOT A REFERENCE", "--json"), "ceilings", 2),  # refused before the engine is asked
        # usage errors click finds while parsing: a path that does not exist, a missing argument
        (("split", "nope.whl", "--json"), "split", 2),
        (("smoke", "nope.whl", "--json"), "smoke", 2),
        (("rocm", "show", "--json"), "rocm show", 2),
        (("plan", "--format", "json"), "plan", 2),
        (("publish", "dist", "--to", "idx", "--json"), "publish", 2),
    ],
)
def test_every_command_refusing_with_json_prints_the_error_document(
    tmp_path: Path, args: tuple[str, ...], command: str, code: int
) -> None:
    """Issue 36: build, diff, ceilings and click's own usage errors printed nothing on stdout with --json."""
    proc = _cli(*args, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    document = json.loads(proc.stdout)
    _validate(document, "error")
    assert document["command"] == command and document["error"]["exit_code"] == code
    assert document["error"]["message"].splitlines()[0] in proc.stderr


def test_a_usage_error_without_json_prints_nothing_on_stdout(tmp_path: Path) -> None:
    proc = _cli("split", "nope.whl", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "" and "does not exist" in proc.stderr


def test_every_command_with_json_has_a_listed_schema() -> None:
    """Issue 36: each command taking --json names its document's schema in `buildkit schema --list`
    (check's is check-report, image ls's image-ls)."""
    listed = set(_cli("schema", "--list").stdout.split())
    aliases = {
        "check": "check-report",
        "image ls": "image-ls",
        "rocm ls": "rocm-ls",
        "rocm show": "rocm-show",
    }
    pending: set[str] = set()
    found = []
    context = click.Context(cli)
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert command is not None
        subs = command.commands.items() if isinstance(command, click.Group) else [("", command)]
        for sub, cmd in subs:
            if any("--json" in param.opts for param in cmd.params):
                found.append(f"{name} {sub}".strip())
    assert {"diff", "ceilings", "plan", "build", "smoke"} <= set(found)
    missing = [c for c in found if c not in pending and aliases.get(c, c) not in listed]
    assert missing == []


def test_smoke_json_is_enveloped_and_valid_for_every_outcome() -> None:
    """`buildkit smoke --json`'s document (rendered from real results of each outcome: the container
    run itself is the docker tier's, tests/docker/test_smoke.py) validates against its listed schema."""
    from buildkit.smoke.report import SmokeResult, Step, render_json

    steps = (
        Step("setup", "python3 -m venv", 0, "ok\n"),
        Step("install", "demo-1.0-py3-none-any.whl", 0, ""),
        Step("import", "demo", 1, "ImportError: version `GLIBC_2.38' not found (required by demo.so)\n"),
    )
    results = [
        SmokeResult(
            "cli", "runtime:1", "failed", "import demo: GLIBC_2.38 not found", "no GPU passthrough", steps
        ),
        SmokeResult("gpu", "runtime:1", "skipped", "needs a GPU", "no GPU on this machine"),
        SmokeResult("ok", "runtime:2", "passed", "", "no GPU passthrough", steps[:2]),
    ]
    document = json.loads(render_json(results))
    _validate(document, "smoke")
    assert document["schema"] == "rocm-buildkit/smoke" and document["ok"] is False
    assert document["results"][0]["steps"][2]["error"].startswith("GLIBC_2.38 not found")
    assert json.loads(render_json(results[1:]))["ok"] is True
    with pytest.raises(jsonschema.ValidationError):
        _validate({**document, "results": [{"name": "x"}]}, "smoke")
