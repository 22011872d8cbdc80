"""``buildkit publish DIST --to TARGET | --recipe R``: publish gated wheels (exit codes:
docs/REFERENCE.md; nothing is published when any wheel is refused). The logic is
:func:`buildkit.service.publish.run_publish`.
"""

from __future__ import annotations

import json

import click

from buildkit.cli.options import json_errors, quiet
from buildkit.errors import PublishRefused, UsageError
from buildkit.publish.resolution import PYPI_SIMPLE
from buildkit.publish.run import outcomes_json, refusals_json
from buildkit.publish.target import Target
from buildkit.records import to_data
from buildkit.service.publish import CHECK_INSTALL_DRY_RUN, run_publish


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
    help="Every wheel must have been built from this recipe (its manifest's recipe build_sha256: the "
    "recipe less publish: and smoke:, which can change without a rebuild), else it is refused; the "
    "target is its publish section's unless --to names one.",
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
    "--require-signature",
    is_flag=True,
    help="Publish only wheels whose attestation is signed with --public-key's key and names their "
    "sha256, also with --recipe (the recipe's publish.require_signature says the same); without a "
    "key, refuse to start.",
)
@click.option(
    "--check-install",
    is_flag=True,
    help="After publishing, ask real pip and uv which file they resolve from the index for each job's "
    "Python and platform (with --recipe, every planned job), with --index-url INDEX --extra-index-url "
    "PYPI and with --extra-index-url INDEX (py3-none and abi3 wheels under every Python they serve); "
    "exit 15 when one would install a file from another index, another version or nothing (pip or uv "
    "refuses the file), or nothing was checked; exit 18 (inconclusive) when the public index cannot "
    "be reached.",
)
@click.option(
    "--local-only",
    is_flag=True,
    help="With --check-install: ask only the published index (--index-url INDEX alone): the wheels "
    "resolve and pip and uv accept them; for an index users never put beside the public one.",
)
@click.option(
    "--pypi-url",
    default=PYPI_SIMPLE,
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
    require_signature: bool,
    check_install: bool,
    local_only: bool,
    pypi_url: str,
    as_json: bool,
) -> None:
    """Publish every wheel under DIST that passes the gate run again (with --recipe's job
    configuration, or the one its attestation signed with --public-key records) and matches its
    manifest's sha256.

    With --json, a refusal is printed as JSON on stdout too (`buildkit schema publish`)."""
    if check_install and dry_run:  # before any output: no JSON document for contradicting flags
        raise UsageError(CHECK_INSTALL_DRY_RUN)
    if local_only and not check_install:
        raise UsageError("--local-only is an option of --check-install")
    with json_errors("publish", as_json, dry_run=dry_run) as out:

        def refused(exc: PublishRefused, target: Target) -> None:
            """The error document with the refused wheels and the target."""
            if out.enabled:
                refusals = json.loads(refusals_json(exc, target, dry_run=dry_run))
                out.echo(
                    {
                        "schema": "rocm-buildkit/error",
                        "schema_version": 1,
                        "command": "publish",
                        "ok": False,
                        "error": exc.to_json(),
                        "dry_run": dry_run,
                        **{k: v for k, v in refusals.items() if k in ("refused", "target")},
                    }
                )

        run = run_publish(
            dist,
            to=to,
            recipe=recipe,
            simple_url=simple_url,
            log_file=log_file,
            dry_run=dry_run,
            public_key=public_key,
            require_signature=require_signature,
            check_install=check_install,
            pypi_url=pypi_url,
            local_only=local_only,
            echo=(lambda line: None) if as_json or quiet() else (lambda line: click.echo(line, err=True)),
            on_refused=refused,
        )
        if as_json:
            data = json.loads(outcomes_json(run.outcomes, run.target, dry_run=dry_run))
            if run.resolved is not None:
                data["install_check"] = to_data(run.resolved)
                data["install_check_inconclusive"] = run.inconclusive
            out.echo(json.dumps(data, indent=2, sort_keys=True))
    if not as_json:
        for o in run.outcomes:
            click.echo(f"{o.status:<17} {o.wheel.name}  {o.where}")
        for r in run.resolved or ():
            click.echo(r.describe())
    failure = run.failure()
    if failure is not None:
        raise failure


publish = publish_cmd
