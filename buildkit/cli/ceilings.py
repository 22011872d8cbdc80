"""``buildkit ceilings IMAGE...``: symbol-version ceilings read from runtime images (nothing run)."""

from __future__ import annotations

import click

from buildkit.cli.options import JsonOutput, enveloped, refusing_in_json


@click.command("ceilings")
@click.argument("images", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON document.")
@click.option("--no-cache", is_flag=True, help="Read the image again even when its id is cached.")
@refusing_in_json("ceilings")
def ceilings(images: tuple[str, ...], out: JsonOutput, no_cache: bool) -> None:
    """GLIBC/GLIBCXX/CXXABI/GCC ceilings defined by IMAGE's libc, libm, libstdc++ and libgcc_s.

    The libraries are copied out of a created, never started container (removed afterwards) and
    their .gnu.version_d read; results are cached by image id. Several images: also their minimum.
    A missing image (or no engine) exits 8; an invalid reference, an image without glibc or with a
    library that cannot be read exits 2.
    """
    # deferred (heavy: the Docker SDK, pyelftools): `buildkit ceilings --help` stays fast
    from buildkit.docker_engine import connect
    from buildkit.image.ceilings import check_image_reference, read_image_ceilings, render_human, report_json

    for image in images:
        check_image_reference(image)
    client = connect()
    try:
        readings = [read_image_ceilings(image, client=client, use_cache=not no_cache) for image in images]
    finally:
        client.close()
    if out.enabled:
        out.echo(enveloped("ceilings", report_json(readings)))
    else:
        click.echo(render_human(readings))
