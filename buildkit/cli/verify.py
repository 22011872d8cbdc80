"""``buildkit verify WHEEL``: rebuild the recorded job and compare, or check the wheel's attestation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from buildkit.cli.options import json_errors
from buildkit.errors import NotReproducible, UsageError
from buildkit.records import to_data

if TYPE_CHECKING:
    from buildkit.attestation import AttestationCheck


@click.command("verify")
@click.argument("wheel", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--recipe",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The recipe (default: recipes/<the manifest's recipe file> under the current directory).",
)
@click.option(
    "--cache/--no-cache",
    "use_cache",
    default=False,
    show_default=True,
    help="Let the rebuild reuse the job's compiler-cache volume (faster, but every compile can then come "
    "from the cache the first build filled, so the compiler's determinism is not what is checked).",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Copy the rebuilt wheel, manifest and attestation into this folder (created and checked "
    "writable before the rebuild).",
)
@click.option(
    "--wheelhouse",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Take the build requirements the manifest locks from this folder of wheels alone (no index: "
    "an air-gapped host); each is checked by sha256.",
)
@click.option(
    "--attestation",
    "check_attestation",
    is_flag=True,
    help="Do not rebuild: check the DSSE signature of WHEEL.intoto.json with --public-key and that its "
    "subject is WHEEL's name and sha256.",
)
@click.option(
    "--attestation-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --attestation: the attestation file (default: WHEEL.intoto.json).",
)
@click.option(
    "--index",
    "index_url",
    default=None,
    metavar="URL",
    help="Do not rebuild: check WHEEL against the provenance the index at URL (its simple/ root, "
    "http(s) or file://) serves for it (data-provenance, written by publish), with --public-key.",
)
@click.option(
    "--public-key",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --attestation or --index (required there): PEM ed25519 public key. Without them it is a "
    "usage error (exit 2), not silently ignored.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Stream the rebuild log.")
def verify(
    wheel: Path,
    recipe: Path | None,
    use_cache: bool,
    keep: Path | None,
    wheelhouse: Path | None,
    check_attestation: bool,
    attestation_file: Path | None,
    index_url: str | None,
    public_key: Path | None,
    as_json: bool,
    verbose: bool,
) -> None:
    """Rebuild WHEEL's recorded job and compare sha256 (exit 0 identical, 12 differs).

    With --attestation, check its signed provenance instead (exit 12 when it does not verify); with
    --index URL, the provenance that index serves for it (exit 12 also when it serves none).
    The rebuild compiles from scratch unless --cache. --public-key and --attestation-file only apply to
    --attestation/--index; --recipe, --cache and --keep only to a rebuild: mixing them is a usage
    error (exit 2). A malformed manifest exits 2.
    With --json, a refusal is printed as JSON on stdout too (`buildkit schema verify`).
    """
    with json_errors("verify", as_json, wheel=str(wheel)) as out:
        if index_url is not None and attestation_file is not None:
            raise UsageError("--index reads the provenance the index serves: drop --attestation-file")
        check_attestation = check_attestation or index_url is not None
        if not check_attestation and (public_key is not None or attestation_file is not None):
            raise UsageError(
                "--public-key/--attestation-file check a signed attestation: add --attestation "
                "(without it, verify rebuilds the wheel and would ignore them)"
            )
        if check_attestation and (
            recipe is not None or use_cache or keep is not None or wheelhouse is not None
        ):
            raise UsageError(
                "--recipe/--cache/--keep/--wheelhouse apply to a rebuild, not to --attestation/--index"
            )
        if check_attestation:
            check = _attestation(wheel, public_key, attestation_file, index_url)
            if as_json:
                out.echo(
                    {
                        "schema": "rocm-buildkit/verify",
                        "schema_version": 1,
                        "ok": True,
                        "attestation": True,
                        "wheel": check.wheel,
                        "sha256": check.sha256,
                        "keyid": check.keyid,
                    }
                )
            else:
                click.echo(
                    f"{check.wheel}: attestation verified (sha256 {check.sha256}, keyid {check.keyid})"
                )
            return

        # deferred (heavy: the build stage, the Docker SDK): --attestation and usage errors never load it
        from buildkit.building.verify import render
        from buildkit.service.verify import verify_rebuild

        result = verify_rebuild(
            wheel,
            recipe=recipe,
            use_cache=use_cache,
            keep=keep,
            wheelhouse=wheelhouse.absolute() if wheelhouse is not None else None,
            echo=lambda line: click.echo(line, err=True),
            verbose=verbose,
        )
        if as_json:
            document = {"schema": "rocm-buildkit/verify", "schema_version": 1, "ok": result.identical}
            out.echo(json.dumps({**document, **to_data(result)}, indent=2))
        else:
            click.echo(render(result))
        if not result.identical:
            names = ", ".join(m.name for m in result.members) or "no member (zip container only)"
            raise NotReproducible(f"{wheel.name}: the rebuild differs; members: {names}")


def _attestation(
    wheel: Path, public_key: Path | None, attestation_file: Path | None, index_url: str | None
) -> AttestationCheck:
    """The attestation beside ``wheel`` (or ``attestation_file``), or the one the index at
    ``index_url`` serves, checked with ``public_key``."""
    # deferred (heavy: cryptography): only the --attestation path needs it
    from buildkit.attestation import load_public_key, verify_attestation, verify_published

    if public_key is None:
        raise UsageError("--attestation/--index need --public-key PEM")
    key = load_public_key(public_key)
    if index_url is not None:
        return verify_published(wheel, key, index_url)
    return verify_attestation(wheel, key, attestation_file)
