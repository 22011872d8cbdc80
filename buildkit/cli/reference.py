"""``buildkit schema [NAME]`` and ``buildkit rules [RULE]``: the reference texts shipped in the package
(a pip install has no repository checkout): the JSON schemas of ``buildkit/schema/`` and the gate rules
(``buildkit/gate/GATE-RULES.md``, kept equal to the repository's docs/GATE-RULES.md by a test)."""

from __future__ import annotations

import difflib
from importlib import resources

import click

from buildkit.errors import UsageError


def _schemas() -> dict[str, str]:
    folder = resources.files("buildkit").joinpath("schema")
    return {
        entry.name.removesuffix(".schema.json"): entry.name
        for entry in folder.iterdir()
        if entry.name.endswith(".schema.json")
    }


@click.command("schema")
@click.argument("name", default="recipe")
@click.option("--list", "list_names", is_flag=True, help="List the schemas instead.")
def schema(name: str, list_names: bool) -> None:
    """Print a JSON schema: the recipe's (default), or NAME's (check-report, image-ls, publish,
    verify, error: what the --json outputs follow). `buildkit schema > recipe.schema.json` gives an
    editor completion: first line of a recipe `# yaml-language-server: $schema=recipe.schema.json`."""
    names = _schemas()
    if list_names:
        for known in sorted(names):
            click.echo(known)
        return
    if name not in names:
        raise UsageError(f"no schema {name!r}; known: {', '.join(sorted(names))}")
    text = resources.files("buildkit").joinpath(f"schema/{names[name]}").read_text(encoding="utf-8")
    click.echo(text, nl=not text.endswith("\n"))


@click.command("rules")
@click.argument("rule", required=False)
def rules(rule: str | None) -> None:
    """Print the gate's rules: what each checks and the failure it prevents, the exit codes, how
    waivers work. With RULE (e.g. ceiling, platform-tag), that rule alone."""
    if rule is None:
        text = resources.files("buildkit").joinpath("gate/GATE-RULES.md").read_text(encoding="utf-8")
        click.echo(text, nl=not text.endswith("\n"))
        return
    # deferred: the rule registry imports every rule module; `buildkit rules` alone needs none
    from buildkit.gate.rules import RULES

    by_id = {r.id: r for r in RULES}
    found = by_id.get(rule)
    if found is None:
        close = difflib.get_close_matches(rule, list(by_id), n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else f"; known: {', '.join(by_id)}"
        raise UsageError(f"no gate rule {rule!r}{hint}")
    click.echo(f"{found.id} ({', '.join(found.severities)})")
    click.echo(f"checks: {found.checks}")
    click.echo(f"prevents: {found.prevents}")
    if found.never_waived:
        click.echo(f"never waived: {found.never_waived}")
