"""``buildkit image build|probe|prepare|ls|prune|seed|bump-base``: builder images (logic in
buildkit.image, buildkit.image.seed, buildkit.image.base; ``probe``: buildkit.image.probe;
``prepare``: buildkit.service.image);
``prune --containers``: buildkit's leftover containers (logic in buildkit.docker_engine)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from buildkit import image as images
from buildkit.cli.options import colour_wanted
from buildkit.docker_engine import (
    CONTAINER_LABEL,
    ENGINE_ERRORS,
    connect,
    engine_failed,
    labelled_containers,
    prune_containers,
)
from buildkit.errors import UsageError
from buildkit.image import seed as seeding
from buildkit.records import to_data
from buildkit.tables import table_lines


def _echo_progress(line: str) -> None:
    click.echo(line, err=True)


def _profile(_ctx: click.Context, _param: click.Parameter, name: str) -> images.Profile:
    """A PROFILE argument (a name click has checked) as the profile the commands pass on."""
    return images.get_profile(name)


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


@click.group("image")
def image() -> None:
    """Builder images: content-addressed builds, listing, pruning, base seeding."""


@image.command("build")
@click.argument("profile", type=click.Choice(sorted(images.PROFILES)), callback=_profile)
@click.option(
    "--rocm",
    "rocm",
    metavar="RELEASE",
    help="The ROCm release to install (e.g. 7.2; default: the newest `buildkit rocm ls` installs), "
    "for profiles that install AMD's packages.",
)
@click.option("--build-arg", "build_args", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--log", "log_path", type=click.Path(dir_okay=False, path_type=Path), help="Build log file.")
@click.option("--rebuild", is_flag=True, help="Build even when the content tag exists.")
@click.option("--quiet", "-q", is_flag=True, help="Do not stream the build output.")
def build(
    profile: images.Profile,
    rocm: str | None,
    build_args: tuple[str, ...],
    log_path: Path | None,
    rebuild: bool,
    quiet: bool,
) -> None:
    """Build PROFILE's image (reused when its content tag exists); prints the tag."""
    ref = images.ensure_image(
        profile,
        build_args=images.profile_rocm_args(profile, rocm, images.parse_build_args(build_args)),
        progress=None if quiet else _echo_progress,
        log_path=log_path,
        rebuild=rebuild,
    )
    state = "built" if ref.built else "reused"
    click.echo(f"{state} {ref.tag} {ref.id[7:19]} {_size(ref.size)}", err=True)
    click.echo(ref.tag)


@image.command("probe")
@click.argument(
    "profile",
    type=click.Choice(sorted(n for n, p in images.PROFILES.items() if p.role == "builder")),
    callback=_profile,
)
@click.option(
    "--rocm", "rocm", required=True, metavar="RELEASE", help="The ROCm release of the image (e.g. 7.2)."
)
@click.option("--python", "pythons", multiple=True, default=("cp312",), show_default=True, help="Repeatable.")
@click.option("--arch", "archs", multiple=True, default=("gfx942",), show_default=True, help="Repeatable.")
@click.option("--build-arg", "build_args", multiple=True, metavar="KEY=VALUE", help="As for `image build`.")
def probe(
    profile: images.Profile,
    rocm: str,
    pythons: tuple[str, ...],
    archs: tuple[str, ...],
    build_args: tuple[str, ...],
) -> None:
    """Check PROFILE's image for ROCm RELEASE (built or reused as `image build` makes it) against the
    builder contract `build` holds it to: the Pythons, auditwheel, hipcc compiling for each arch, its
    GCC, and the profile's ROCm libraries by SONAME. Exit 14 lists every gap with the package that
    provides it."""
    from buildkit.image.contract import image_contract  # the Docker SDK: only this command needs it
    from buildkit.image.probe import Contract, check_builder

    try:
        client = connect()
        ref = images.ensure_image(
            profile,
            build_args=images.profile_rocm_args(profile, rocm, images.parse_build_args(build_args)),
            client=client,
            progress=_echo_progress,
        )
        contract = Contract.of(pythons, archs, image=image_contract(profile, rocm))
        check_builder(client, ref.tag, ref.id, contract, progress=_echo_progress)
    except ENGINE_ERRORS as exc:
        raise engine_failed(exc, during=f"probing the image of {profile.name}") from None
    pieces = ", ".join(p.name for p in contract.image.pieces) if contract.image else ""
    click.echo(
        f"{ref.tag} meets the builder contract ({', '.join(contract.pythons)}; {', '.join(archs)}; {pieces})"
    )


@image.command("prepare")
@click.argument("recipe", type=click.Path(exists=True, dir_okay=False))
@click.option("--quiet", "-q", is_flag=True, help="Do not stream the build output.")
def prepare(recipe: str, quiet: bool) -> None:
    """Build or reuse every image RECIPE's jobs build in and its smoke entries run in (pulling a
    missing base); prints their refs and their bases', one a line (what `docker save` hands to
    other machines: their `build` and `smoke` then reuse the images by their content tags)."""
    from buildkit.service.image import prepare_images  # the Docker SDK: only this command needs it

    try:
        prepared = prepare_images(
            recipe, client=connect(), progress=(lambda _line: None) if quiet else _echo_progress
        )
    except ENGINE_ERRORS as exc:
        raise engine_failed(exc, during=f"preparing the images of {recipe}") from None
    for item in prepared:
        rocm = f" (ROCm {item.rocm})" if item.rocm else ""
        click.echo(f"{item.role} {item.ref}{rocm}", err=True)
    for item in prepared:
        click.echo(item.ref)


@image.command("bump-base")
@click.argument("profile", type=click.Choice(sorted(images.PROFILES)), callback=_profile)
@click.option("--tag", default="latest", show_default=True, help="The tag of the base repository to pin.")
@click.option("--dry-run", is_flag=True, help="Resolve and report; do not rewrite the Dockerfile.")
def bump_base(profile: images.Profile, tag: str, dry_run: bool) -> None:
    """Pin PROFILE's base image to the digest the registry serves for TAG now (docker buildx
    imagetools inspect), rewriting its Dockerfile's FROM line; needs the registry."""
    from buildkit.image import base  # only this command needs it (start-up time)

    result = base.bump_base(profile, tag, dry_run=dry_run)
    click.echo(f"{result.reference} is {result.new}")
    if not result.changed:
        click.echo(f"{result.dockerfile.name} already pins it")
    elif result.written:
        click.echo(f"{result.dockerfile}: {result.old} -> {result.new}")
    else:
        click.echo(f"{result.dockerfile} pins {result.old}; --dry-run: not rewritten")


@image.command("ls")
@click.option("--json", "as_json", is_flag=True, help="JSON (`buildkit schema image-ls`).")
def ls(as_json: bool) -> None:
    """Our images: profile, tag, size, created, and whether their sources are current."""
    infos = images.list_images(connect())
    if as_json:
        data = {
            "schema": "rocm-buildkit/image-ls",
            "schema_version": 1,
            "images": to_data(infos),
        }
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    rows = [
        (
            info.profile,
            ", ".join(info.tags) or "<untagged> " + info.id[7:19],
            _size(info.size),  # the engine's image attrs "Size": the image with its base layers
            info.created[:19],
            "current" if info.current else "stale",
        )
        for info in infos
    ]
    header = ("PROFILE", "TAG", "SIZE", "CREATED", "STATE")
    colours = {"current": "green", "stale": "yellow"}
    for line in table_lines([header, *rows], right={2}, styled=colour_wanted(sys.stdout), colours=colours):
        click.echo(line)


def _interactive() -> bool:
    """Whether a person can answer a question: stdin is a terminal."""
    return sys.stdin.isatty()


def _go_ahead(what: str, yes: bool, dry_run: bool) -> bool:
    """After the listing: False for --dry-run or a "no"; --yes, or a "yes" on a terminal, goes ahead.
    Without --yes and without a terminal (a script, CI) nothing is removed: a UsageError (exit 2)."""
    if dry_run:
        click.echo(f"--dry-run: would remove {what}; nothing removed", err=True)
        return False
    if yes:
        return True
    if not _interactive():
        raise UsageError(
            f"refusing to remove {what} without --yes: stdin is not a terminal, so nobody can confirm "
            "(the engine may be shared; --dry-run lists them)"
        )
    if click.confirm(f"remove {what}?", default=False, err=True):
        return True
    click.echo("nothing removed", err=True)
    return False


def _prune_containers(names: set[str], dry_run: bool, yes: bool) -> None:
    """``prune --containers``: list, then remove those whose owner is gone; name the live ones left."""
    client = connect()
    try:
        found = [box for box in labelled_containers(client) if not names or box.name in names]
    except ENGINE_ERRORS as exc:
        raise engine_failed(exc, during="listing the labelled containers") from None
    gone = [box for box in found if not box.live]
    for box in found:
        run = f", build {box.run_id}" if box.run_id else ""
        verb = "leave" if box.live else "would remove"
        click.echo(f"{verb} container {box.name} ({box.purpose}{run}; {box.status}; {box.owner})")
    if not gone:
        left = f" ({len(found)} live one(s) left)" if found else ""
        click.echo(f"no labelled container whose owner is gone{left}", err=True)
        return
    if not _go_ahead(f"{len(gone)} container(s)", yes, dry_run):
        return
    try:
        pruned = prune_containers(client, only={box.name for box in gone})
    except ENGINE_ERRORS as exc:
        raise engine_failed(exc, during="removing the labelled containers") from None
    for box in pruned:
        run = f", build {box.run_id}" if box.run_id else ""
        click.echo(f"removed container {box.name} ({box.purpose}{run}; was {box.status})")
    live = len(found) - len(gone)
    click.echo(f"{len(pruned)} container(s) removed, {live} live one(s) left", err=True)


@image.command("prune")
@click.option("--all", "remove_all", is_flag=True, help="Remove all our images, current ones too.")
@click.option(
    "--containers",
    is_flag=True,
    help=f"Remove the containers labelled {CONTAINER_LABEL} whose owner is gone instead (left by "
    "killed runs); a container whose owning process still runs (on this host, since this boot), or "
    "whose owner cannot be told gone, is left and named.",
)
@click.option(
    "--name",
    "names",
    multiple=True,
    help="With --containers: only the container of this name (repeatable).",
)
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.option(
    "--yes", "-y", is_flag=True, help="Remove without asking (needed when stdin is not a terminal)."
)
def prune(remove_all: bool, containers: bool, names: tuple[str, ...], dry_run: bool, yes: bool) -> None:
    """Remove our images whose Dockerfile or context changed since they were built; with
    --containers, the containers buildkit or its cibuildwheel runs made whose owner is gone.

    Lists what it would remove first, then asks (on a terminal) or needs --yes; --dry-run only lists.
    """
    if containers:
        if remove_all:
            raise click.UsageError("--all is for images; --containers removes labelled containers")
        _prune_containers(set(names), dry_run, yes)
        return
    if names:
        raise click.UsageError("--name is for --containers")
    client = connect()
    candidates = images.prunable_images(client, remove_all=remove_all)
    for info in candidates:
        state = "current" if info.current else "stale"
        click.echo(f"would remove {', '.join(info.tags) or info.id[7:19]} ({_size(info.size)}, {state})")
    if not candidates:
        click.echo(
            "no image to remove" + ("" if remove_all else " (none is stale; --all removes current ones)"),
            err=True,
        )
        return
    total = _size(sum(info.size for info in candidates))
    if not _go_ahead(f"{len(candidates)} image(s), {total}", yes, dry_run):
        return
    removed = images.prune_images(client, remove_all=remove_all, only={info.id for info in candidates})
    for info in removed:
        click.echo(f"removed {', '.join(info.tags) or info.id[7:19]} ({_size(info.size)})")
    click.echo(f"{len(removed)} image(s) removed", err=True)


@image.command("seed")
@click.argument("tag")
@click.option("--mirror", help="Debian mirror (default: the host's apt sources, else deb.debian.org).")
@click.option("--force", is_flag=True, help="Re-create the image even when the tag exists.")
def seed(tag: str, mirror: str | None, force: bool) -> None:
    """Make a Debian base image TAG (e.g. debian:trixie-slim) with debootstrap + docker import."""
    seeding.suite_of(tag)
    result = seeding.seed_base(tag, client=connect(), mirror=mirror, progress=_echo_progress, force=force)
    click.echo(f"{'created' if result.created else 'kept'} {result.tag} {result.id[7:19]}")
