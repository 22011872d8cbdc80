"""``buildkit publish DIST --to TARGET | --recipe R``: publish gated wheels (manifest checked, sha256
recomputed; with ``--recipe``, every wheel built from that recipe file).

Exit 0 when every wheel is published or already was (``--dry-run``: would be published or already
was), 10 (PublishRefused) when any wheel is refused (nothing is published then) or the index refuses an
upload, 13 (PublishUnavailable) when the index cannot be reached or fails (DNS, connection refused,
timeout, HTTP 5xx/408/429: retry). 2 for bad usage, including an empty or unwritable directory target.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import click

from buildkit.cli.options import JsonOutput, json_errors
from buildkit.errors import InstallResolutionFailed, PublishRefused, UsageError
from buildkit.plan.models import Plan
from buildkit.publish import resolution
from buildkit.publish import run as publishing
from buildkit.publish.run import outcomes_json, refusals_json
from buildkit.publish.scrub import scrub, secrets_from
from buildkit.publish.target import Target, parse_target, target_of
from buildkit.recipe import Recipe, load_recipe
from buildkit.records import to_data


@click.command("publish")
@click.argument("dist", type=click.Path(exists=True))
@click.option(
    "--to",
    "to",
    default=None,
    help="`pypi`, an index upload URL (twine; e.g. a pypiserver), or a directory / file:// URL "
    "(a static PEP 503 index is written there).",
)
@click.option(
    "--recipe",
    default=None,
    help="Take the target from this recipe's publish section; every wheel must have been built from "
    "this recipe file (its manifest's recipe sha256), else it is refused.",
)
@click.option("--simple-url", default=None, help="The index's PEP 503 pages (default: UPLOAD_URL/simple/).")
@click.option(
    "--log",
    "log_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Append the publish log (credentials scrubbed) to this file.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Check everything (manifests, recipe, the target's current state) and print what would be "
    "published where; write and upload nothing.",
)
@click.option(
    "--public-key",
    "public_key",
    type=click.Path(dir_okay=False),
    envvar="BUILDKIT_PUBLISH_KEY",
    default=None,
    help="The ed25519 public key (PEM) the builds sign their attestations with (BUILDKIT_SIGNING_KEY's): "
    "each wheel's attestation must verify with it, and the gate runs again with the configuration it "
    "signs. Without --recipe this is required. [env: BUILDKIT_PUBLISH_KEY]",
)
@click.option(
    "--check-install",
    is_flag=True,
    help="After publishing, ask real pip and uv which file they resolve from the index for each job's "
    "Python and platform (with --recipe, every planned job), with --index-url INDEX --extra-index-url "
    "PYPI and with --extra-index-url INDEX; exit 15 when one would install a file from another index.",
)
@click.option(
    "--pypi-url",
    default=resolution.PYPI_SIMPLE,
    show_default=True,
    help="The public index the install check puts beside the published one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the outcome (or the refusals) as JSON.")
def publish_cmd(
    dist: str,
    to: str | None,
    recipe: str | None,
    simple_url: str | None,
    log_file: str | None,
    dry_run: bool,
    public_key: str | None,
    check_install: bool,
    pypi_url: str,
    as_json: bool,
) -> None:
    """Publish every wheel under DIST that passes the gate run again (with --recipe's job
    configuration, or the one its attestation signed with --public-key records) and matches its
    manifest's sha256.

    With --json, a refusal is printed as JSON on stdout too (`buildkit schema publish`)."""
    if check_install and dry_run:
        raise UsageError("--check-install asks pip and uv about the published index: not with --dry-run")
    with json_errors("publish", as_json, dry_run=dry_run) as out:
        outcomes, target, loaded = _publish(dist, to, recipe, simple_url, log_file, dry_run, public_key, out)
        resolved = _check_install(outcomes, target, loaded, pypi_url) if check_install else None
        if as_json:
            data = json.loads(outcomes_json(outcomes, target, dry_run=dry_run))
            if resolved is not None:
                data["install_check"] = to_data(resolved)
            out.echo(json.dumps(data, indent=2, sort_keys=True))
    if not as_json:
        for o in outcomes:
            click.echo(f"{o.status:<17} {o.wheel.name}  {o.where}")
        for r in resolved or ():
            click.echo(r.describe())
    failed = [r for r in resolved or () if r.failed]
    if failed:
        raise InstallResolutionFailed(
            f"published, but {len(failed)} install resolution(s) would get another file:\n"
            + "\n".join(f"  {r.describe()}" for r in failed)
        )


def _publish(
    dist: str,
    to: str | None,
    recipe: str | None,
    simple_url: str | None,
    log_file: str | None,
    dry_run: bool,
    public_key: str | None,
    out: JsonOutput,
) -> tuple[list[publishing.Outcome], Target, Recipe | None]:
    if (to is None) == (recipe is None):
        raise UsageError("give exactly one of --to TARGET or --recipe R")
    loaded: Recipe | None = None
    if to is not None:
        target = parse_target(to, simple_url=simple_url)
    else:
        loaded = load_recipe(str(recipe))
        target = target_of(loaded, simple_url=simple_url)
    secrets = secrets_from(os.environ)
    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(Path(log_file).open("a", encoding="utf-8")) if log_file else None

        def log(line: str) -> None:
            line = scrub(line, secrets)
            if handle is not None:
                handle.write(line + "\n")
                handle.flush()
            if not out.enabled:
                click.echo(line, err=True)

        try:
            log(f"publish {dist} -> {target.describe()}{' (dry run)' if dry_run else ''}")
            outcomes = publishing.publish(
                Path(dist),
                target,
                log=log,
                recipe=loaded,
                dry_run=dry_run,
                public_key=Path(public_key) if public_key else None,
                expand=_expand_with_runtime_ceilings,
            )
        except Exception as exc:
            if handle is not None:  # the CLI prints the error itself; the log file keeps it too
                handle.write(scrub(f"error: {exc}", secrets) + "\n")
            if out.enabled and isinstance(exc, PublishRefused):  # the error document, with the refusals
                out.echo(
                    {
                        "schema": "rocm-buildkit/error",
                        "schema_version": 1,
                        "command": "publish",
                        "ok": False,
                        "error": exc.to_json(),
                        "dry_run": dry_run,
                        **{
                            k: v
                            for k, v in json.loads(refusals_json(exc, target, dry_run=dry_run)).items()
                            if k in ("refused", "target")
                        },
                    }
                )
            raise
    return outcomes, target, loaded


def _check_install(
    outcomes: list[publishing.Outcome], target: Target, recipe: Recipe | None, pypi_url: str
) -> list[resolution.Resolution]:
    if target.kind == "directory":
        index = (Path(target.location).resolve() / "simple").as_uri() + "/"
    else:
        assert target.simple_url is not None
        index = target.simple_url
    planned = []
    if recipe is not None:
        planned = [
            (recipe.name, j.python, j.platform_tag) for j in _expand_with_runtime_ceilings(recipe).jobs
        ]
    wheels = [o.wheel for o in outcomes]
    return resolution.check_install(resolution.targets_of(wheels, planned), index, pypi_url)


def _expand_with_runtime_ceilings(recipe: Recipe) -> Plan:
    """The recipe's plan as ``build`` expands it (runtime images' ceilings read), so that each job's
    gate configuration is the one its build was gated with."""
    from buildkit.service.plan import plan_of  # the plan stage only with --recipe (start-up time)

    return plan_of(recipe)


publish = publish_cmd
