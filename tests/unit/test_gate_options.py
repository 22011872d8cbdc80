"""The gate's options are one table (buildkit/gate/options.py): each row is a click option of the
commands that take gate options, applies over a recipe's job by its merge rule (replace, add,
tighten), lands in the configuration's JSON, and is a row of the options table of docs/GATE-RULES.md
(BUILDKIT_REGEN_GOLDEN=1 rewrites it). A row added to the table is all of these at once."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from buildkit.cli import main
from buildkit.gate import options
from buildkit.gate.config import GateConfig, JobIdentity, json_name, options_table
from buildkit.gate.options import (
    OPTIONS,
    GateFlags,
    GateOption,
    apply_options,
    merge,
    option,
    parse_size_option,
)
from buildkit.gatespec import Required
from buildkit.records import to_data
from tests.helpers.wheel_zip import write_wheel

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "GATE-RULES.md"
RECIPE_SCHEMA = REPO / "buildkit" / "schema" / "recipe.schema.json"
REGEN = os.environ.get("BUILDKIT_REGEN_GOLDEN") == "1"
BEGIN = "<!-- options:begin (generated from buildkit/gate/options.py; BUILDKIT_REGEN_GOLDEN=1) -->"
END = "<!-- options:end -->"


def _section(text: str) -> tuple[int, int]:
    return text.index(BEGIN) + len(BEGIN), text.index(END)


# --------------------------------------------------------------------------- the table and its readers
def test_the_options_table_of_the_docs_is_the_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = _section(text)
    if REGEN:
        text = text[:start] + "\n" + options_table() + text[end:]
        DOC.write_text(text, encoding="utf-8")
        start, end = _section(text)
    assert text[start:end].strip() == options_table().strip(), "regenerate with BUILDKIT_REGEN_GOLDEN=1"
    for row in OPTIONS:  # each option once, by its flag
        assert text[start:end].count(f"| `{row.flag}`") == 1


def _schema_has(schema: Mapping[str, Any], path: str) -> bool:
    node: Any = schema
    for part in path.split("."):
        name, items = part.removesuffix("[]"), part.endswith("[]")
        node = node.get("properties", {}).get(name)
        if node is None:
            return False
        if items:
            node = node["items"]
    return True


def test_each_row_names_a_field_a_json_key_and_a_recipe_key_that_exist() -> None:
    schema = json.loads(RECIPE_SCHEMA.read_text(encoding="utf-8"))
    # the stable-ABI and host-ISA fields are in the JSON only when set
    document = to_data(
        GateConfig(
            torch_stable="2.10", torch_below="3.0", isa_report=True, isa_strict=True, isa_baseline="x86-64"
        )
    )
    assert not {"torch_stable", "isa_report", "isa_strict", "isa_baseline"} & set(to_data(GateConfig()))
    assert len({r.flag for r in OPTIONS}) == len({r.name for r in OPTIONS}) == len(OPTIONS)
    for row in OPTIONS:
        assert row.flag == "--" + row.name.replace("_", "-") or row.name in ("exclude_sets", "required")
        assert row.field in GateConfig._fields, row
        assert json_name(row).split(".")[0] in document, row
        if row.key is not None:
            assert isinstance(getattr(GateConfig(), row.field), Mapping), row
        if row.recipe is not None:
            assert _schema_has(schema, row.recipe), f"{row.flag}: no recipe key {row.recipe}"
        assert row.merge in ("replace", "add", "tighten") and row.help.endswith((".", ")"))
    assert json_name(option("max_glibcxx")) == "ceilings.GLIBCXX"
    assert not _schema_has(schema, "manylinux.nope") and not _schema_has(schema, "torch[].nope")


def test_check_takes_every_option_and_diff_those_of_the_run_time_libraries() -> None:
    from buildkit.cli.check import check
    from buildkit.cli.diff import diff

    flags = [p.opts[0] for p in check.params if p.name in {r.name for r in OPTIONS}]
    assert flags == [r.flag for r in OPTIONS]  # in the table's order
    assert [p.opts[0] for p in diff.params if p.name in {r.name for r in OPTIONS}] == [
        "--exclude",
        "--exclude-set",
        "--rocm",
    ]
    rocm = next(p for p in diff.params if p.name == "rocm")
    assert rocm.help is not None and rocm.help.startswith("ROCm release whose runtime libraries")


# --------------------------------------------------------------------------- precedence, by rule
def test_replace_a_value_given_replaces_the_jobs() -> None:
    base = GateConfig(
        policy="manylinux_2_28",
        ceilings={"GLIBC": "2.28", "GLIBCXX": "3.4.24"},
        archs=("gfx908", "gfx90a"),
        size_limit=100,
        torch="2.9",
    )
    given = GateFlags(max_glibcxx="3.4.30", archs="gfx942", size_limit="1KiB", torch="2.10")
    config = apply_options(base, given)
    assert config.ceilings == {"GLIBC": "2.28", "GLIBCXX": "3.4.30"}  # that one ceiling, the order kept
    assert list(config.ceilings) == ["GLIBC", "GLIBCXX"]
    assert (config.archs, config.size_limit, config.torch) == (("gfx942",), 1024, "2.10")
    assert config.policy == "manylinux_2_28"  # not given: the job's
    assert apply_options(base, GateFlags(size_limit="2048")).size_limit == 2048  # smaller or larger


def test_replace_a_policy_also_replaces_the_platform_tag_the_job_identity_expects() -> None:
    identity = JobIdentity("cp312-rocm7.2", "1.0", "cp312", "manylinux_2_28_x86_64")
    config = apply_options(
        GateConfig(policy="manylinux_2_28", identity=identity), GateFlags(policy="manylinux_2_34")
    )
    assert config.identity is not None and config.identity.platform_tag == "manylinux_2_34_x86_64"


def test_replace_rocm_and_toolchain_replace_the_pin_whole() -> None:
    base = apply_options(GateConfig(), GateFlags(toolchain="debian-trixie"))
    assert base.toolchain == "debian-trixie" and base.rocm is not None and base.rocm_sonames
    pinned = apply_options(base, GateFlags(rocm="7.2"))
    assert (pinned.rocm, pinned.toolchain) == ("7.2", None)  # a release alone: AMD's, no toolchain
    assert pinned.rocm_sonames["libamdhip64"] == "libamdhip64.so.7"


def test_add_the_values_given_are_added_to_the_jobs_first_none_twice() -> None:
    from_recipe = Required("pkg/*.co", "gate.require[0] (r.yaml:3:5)")
    base = GateConfig(exclude_globs=("libamdhip64.so*", "libfoo.so*"), required=(from_recipe,))
    config = apply_options(base, GateFlags(exclude=("libfoo.so*", "libbar.so*"), required=("pkg/*.co",)))
    assert config.exclude_globs == ("libamdhip64.so*", "libfoo.so*", "libbar.so*")
    assert config.required == (from_recipe, Required("pkg/*.co", "--require"))
    # a named set expands for the ROCm release in effect: --rocm, else the job's
    with_set = apply_options(GateConfig(rocm="5.7"), GateFlags(exclude_sets=("rocm",)))
    assert with_set.exclude_globs == tuple(options.exclude_set_globs(["rocm"], "5.7"))
    assert not any(g.startswith("libhipsparselt") for g in with_set.exclude_globs)


def test_tighten_the_stricter_of_the_two_is_kept() -> None:
    assert apply_options(GateConfig(), GateFlags(match_features=True)).match_features is True
    assert apply_options(GateConfig(match_features=True), GateFlags()).match_features is True
    assert merge("tighten", True, False) is True and merge("tighten", False, True) is True
    assert merge("tighten", 2048, 1024) == 1024 and merge("tighten", 1024, 2048) == 1024
    assert merge("tighten", None, 1024) == 1024  # no limit yet: the one given
    assert merge("replace", 1024, 2048) == 2048 and merge("add", ("a",), ("b", "a")) == ("a", "b")


def test_an_option_given_empty_is_not_given_and_an_unknown_one_is_refused() -> None:
    base = GateConfig(policy="manylinux_2_28", archs=("gfx90a",))
    assert apply_options(base, GateFlags(policy="", archs=" ", torch="", rocm="")) == base.validated()
    assert "policy" not in GateFlags(policy=None, exclude=(), match_features=False)
    with pytest.raises(TypeError, match="unknown gate option"):
        GateFlags(polcy="manylinux_2_28")
    with pytest.raises(KeyError, match="no gate option 'nope'"):
        option("nope")


def test_without_a_recipe_the_options_apply_to_the_defaults() -> None:
    from buildkit.service.check import gate_config

    config = gate_config(GateFlags(size_warn="1GiB", max_gcc="7.0.0", required=()))
    assert config == GateConfig(size_warn=2**30, ceilings={"GCC": "7.0.0"})
    assert gate_config(GateFlags()) == GateConfig()


# --------------------------------------------------------------------------- a new row is all of it
#: an option no command has: the smaller of the recipe's size limit and the one given
CAP = GateOption(
    "--size-cap",
    "size_cap",
    "size_limit",
    "tighten",
    "Fail above this size, or above the recipe's size_budget.limit when that is smaller.",
    recipe="size_budget.limit",
    parse=parse_size_option,
)


@pytest.fixture
def with_cap(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The table with :data:`CAP` added, and ``check`` made again from it."""
    import buildkit.cli.check as cli_check

    monkeypatch.setattr(options, "OPTIONS", (*options.OPTIONS, CAP))
    importlib.reload(cli_check)
    yield
    monkeypatch.undo()
    importlib.reload(cli_check)


def _check_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    with contextlib.suppress(SystemExit):  # 7: the wheel is no job's, its configuration is reported
        main(["check", "--json", *args])
    out = capsys.readouterr().out
    (wheel,) = json.loads(out)["wheels"]
    config: dict[str, Any] = wheel["config"]
    return config


def test_a_row_added_to_the_table_is_a_flag_applies_by_its_rule_and_is_in_the_json(
    with_cap: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from buildkit.cli.check import check
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    # a click option of check, with its help
    (param,) = [p for p in check.params if p.name == "size_cap"]
    assert param.opts == ["--size-cap"] and param.help == CAP.help
    # its precedence: the stricter of the recipe's limit (2 MiB) and the one given
    text = (REPO / "recipes" / "reference-trixie.yaml").read_text()
    text = text.replace("path: ../csrc", f"path: {REPO / 'csrc'}")
    text = text.replace("size_budget:\n  limit: 20MiB\n", "size_budget:\n  limit: 2MiB\n")
    recipe = tmp_path / "capped.yaml"
    recipe.write_text(text)
    job = expand(load_recipe(recipe)).jobs[0].id
    wheel = write_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b""})
    at_job = ("--recipe", str(recipe), "--job", job)
    # in the JSON, under the key of its field
    key = json_name(CAP)
    assert key == "size_limit"
    assert _check_json(capsys, str(wheel), *at_job, "--size-cap", "1MiB")[key] == 2**20
    assert _check_json(capsys, str(wheel), *at_job, "--size-cap", "1GiB")[key] == 2 * 2**20
    assert _check_json(capsys, str(wheel), "--size-cap", "1MiB")[key] == 2**20  # no recipe: the defaults'
    # and a row of the documentation, which now differs from the docs: the drift test would fail
    assert (
        "| `--size-cap` | `size_budget.limit` | `size_limit` | the stricter of the two |" in options_table()
    )
    start, end = _section(DOC.read_text(encoding="utf-8"))
    assert DOC.read_text(encoding="utf-8")[start:end].strip() != options_table().strip()
