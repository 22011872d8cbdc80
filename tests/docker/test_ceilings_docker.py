"""``buildkit ceilings`` on the real engine: the Debian bookworm and trixie images seeded locally,
and a synthetic image (``docker import`` of a tar made here) without libstdc++ and with relative,
absolute, directory and dangling symlinks.

The expected values are read independently of buildkit.image.ceilings: the image *runs* ``ldd --version``
and ``cat``s its libraries (the shell follows the symlinks), and binutils' ``readelf -V`` on the host
parses those bytes. buildkit itself never starts a container: checked with the engine's events.

Both seeded minbase images ship libstdc++6 here (apt's own dependency). Where a seeded image lacks
it, the test derives ``buildkit-test/<base>-libstdcxx:<base id>`` with ``apt-get install -y
libstdc++6`` (built once, reused by tag) so the GLIBCXX figures can still be checked.
"""

from __future__ import annotations

import io
import json
import tarfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

import docker.errors
import jsonschema
import pytest

from buildkit.cli import main
from buildkit.errors import DockerUnavailable
from buildkit.image.ceilings import ceilings_from_images, read_image_ceilings
from tests.unit.test_ceilings import readelf_definitions, top

pytestmark = pytest.mark.docker
LIBDIR = "/usr/lib/x86_64-linux-gnu"
LABEL = "io.rocm-buildkit.container=ceilings"


def run_in(client: Any, image: str, command: str) -> bytes:
    out: bytes = client.containers.run(image, ["sh", "-c", command], remove=True, network_disabled=True)
    return out


def with_libstdcxx(client: Any, image: str) -> str:
    """``image`` itself when it has libstdc++.so.6, else a derived image that installs it."""
    try:
        run_in(client, image, f"test -e {LIBDIR}/libstdc++.so.6")
        return image
    except docker.errors.ContainerError:
        pass
    base_id = client.images.get(image).id.split(":")[-1][:12]
    tag = f"buildkit-test/{image.replace(':', '-')}-libstdcxx:{base_id}"
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        dockerfile = (
            f"FROM {image}\nRUN apt-get update && apt-get install -y --no-install-recommends libstdc++6\n"
        )
        client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True)
    return tag


def independent(client: Any, image: str, tmp: Path) -> dict[str, str]:
    """Ceilings read by running the image (``ldd --version``; ``cp -L`` of the libraries into a bind
    mount, the image's own cp following the symlinks) and parsing them with binutils on the host."""
    libs = {
        "GLIBC": "libc.so.6",
        "GLIBCXX": "libstdc++.so.6",
        "CXXABI": "libstdc++.so.6",
        "GCC": "libgcc_s.so.1",
    }
    out_dir = tmp / "independent"
    out_dir.mkdir(exist_ok=True)
    names = " ".join(f"{LIBDIR}/{soname}" for soname in sorted(set(libs.values())))
    client.containers.run(
        image,
        ["sh", "-c", f"cp -L {names} /out/ && chmod a+r /out/*"],
        remove=True,
        network_disabled=True,
        volumes={str(out_dir): {"bind": "/out", "mode": "rw"}},
    )
    out = {prefix: top(readelf_definitions(out_dir / soname), prefix) for prefix, soname in libs.items()}
    ldd = run_in(client, image, "ldd --version").decode().splitlines()[0]
    out["release"] = ldd.rsplit(" ", 1)[-1]
    return out


def start_events(client: Any, since: float) -> list[dict[str, Any]]:
    until = time.time() + 1
    events = client.events(
        since=int(since), until=int(until), decode=True, filters={"type": "container", "label": LABEL}
    )
    return [e for e in events if e.get("Action") in ("start", "create", "destroy")]


@pytest.mark.parametrize(
    ("image", "issue_figures"),
    [("debian:bookworm-slim", ("2.36", "3.4.30")), ("debian:trixie-slim", ("2.41", "3.4.33"))],
)
def test_seeded_debian_images(
    docker_client: Any,
    image: str,
    issue_figures: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        docker_client.images.get(image)
    except docker.errors.ImageNotFound:
        pytest.fail(f"{image} is not seeded: run `buildkit image seed {image}`", pytrace=False)
    image = with_libstdcxx(docker_client, image)
    since = time.time() - 1
    reading = read_image_ceilings(image, client=docker_client, use_cache=False, cache=tmp_path / "cache")
    expected = independent(docker_client, image, tmp_path)
    print(image, reading.ceilings, reading.policy_match().describe(), "independent:", expected)

    assert reading.ceilings == {k: v for k, v in expected.items() if k != "release"}
    assert reading.glibc_release == expected["release"]
    if (reading.ceilings["GLIBC"], reading.ceilings["GLIBCXX"]) != issue_figures:
        print(f"note: {image} defines {reading.ceilings}, the issue expected {issue_figures}")
    libstdcxx = reading.library("libstdc++.so.6")
    assert libstdcxx is not None and libstdcxx.chain and libstdcxx.path is not None
    assert libstdcxx.path.startswith("/") and libstdcxx.path != libstdcxx.chain[0]  # symlink resolved
    match = reading.policy_match()
    assert (
        match.policy is not None and match.policy.name == f"manylinux_{expected['release'].replace('.', '_')}"
    )

    # created and destroyed, never started; nothing left behind
    actions = [e["Action"] for e in start_events(docker_client, since)]
    assert "create" in actions and "destroy" in actions and "start" not in actions
    assert not docker_client.containers.list(all=True, filters={"label": LABEL})

    cached = read_image_ceilings(image, client=docker_client, cache=tmp_path / "cache")
    assert cached.cached and cached.ceilings == reading.ceilings
    image_id = docker_client.images.get(image).id.split(":")[-1]
    assert (tmp_path / "cache" / f"{image_id}.json").is_file()

    capsys.readouterr()  # drop the figures printed above
    monkey_cache = str(tmp_path / "xdg")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", monkey_cache)
        try:
            main(["ceilings", image, "--json"])
        except SystemExit as exc:
            assert not exc.code
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["images"][0]["ceilings"] == reading.ceilings
    # issue 36: the envelope, and the schema `buildkit schema --list` names
    schema = json.loads(resources.files("buildkit").joinpath("schema/ceilings.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert doc["schema"] == "rocm-buildkit/ceilings"
    assert (Path(monkey_cache) / "rocm-buildkit" / "ceilings" / f"{image_id}.json").is_file()


def _tar_image(client: Any) -> str:
    """An image with only the host's libc/libm/libgcc_s, no libstdc++, and these links:
    /lib -> usr/lib (merged /usr), libc.so.6 -> libc-2.xx.so (relative), libm.so.6 ->
    /opt/real/libm.so.6 (absolute), /lib/x86_64-linux-gnu/libgcc_s.so.1 -> missing (dangling; the
    real one is in /usr/lib64)."""
    host = Path("/lib/x86_64-linux-gnu")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add_file(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755, 0
            tar.addfile(info, io.BytesIO(data))

        def add_link(name: str, target: str) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, 0
            tar.addfile(info)

        def add_dir(name: str) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)

        for d in ("usr", "usr/lib", "usr/lib/x86_64-linux-gnu", "usr/lib64", "opt", "opt/real"):
            add_dir(d)
        add_link("lib", "usr/lib")
        add_file("usr/lib/x86_64-linux-gnu/libc-real.so", (host / "libc.so.6").resolve().read_bytes())
        add_link("usr/lib/x86_64-linux-gnu/libc.so.6", "libc-real.so")
        add_file("opt/real/libm.so.6", (host / "libm.so.6").resolve().read_bytes())
        add_link("usr/lib/x86_64-linux-gnu/libm.so.6", "/opt/real/libm.so.6")
        add_link("usr/lib/x86_64-linux-gnu/libgcc_s.so.1", "libgcc_s-missing.so")
        add_file("usr/lib64/libgcc_s.so.1", (host / "libgcc_s.so.1").resolve().read_bytes())
    data = buf.getvalue()
    import hashlib

    tag = f"buildkit-test/ceilings-nocxx:{hashlib.sha256(data).hexdigest()[:12]}"
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        repo, version = tag.split(":")
        client.api.import_image_from_data(data, repository=repo, tag=version)
    return tag


@pytest.mark.skipif(not Path("/lib/x86_64-linux-gnu/libc.so.6").exists(), reason="needs an x86_64 glibc host")
def test_image_without_libstdcxx_and_odd_symlinks(docker_client: Any, tmp_path: Path) -> None:
    tag = _tar_image(docker_client)
    reading = read_image_ceilings(tag, client=docker_client, use_cache=False, cache=tmp_path)
    host = Path("/lib/x86_64-linux-gnu")
    assert reading.ceilings == {
        "GLIBC": top(readelf_definitions((host / "libc.so.6").resolve()), "GLIBC"),
        "GCC": top(readelf_definitions((host / "libgcc_s.so.1").resolve()), "GCC"),
    }
    assert reading.absent == ("GLIBCXX", "CXXABI")
    libc, libm, cxx, gcc = (
        reading.library(n) for n in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1")
    )
    assert libc is not None and libc.path == "/lib/x86_64-linux-gnu/libc-real.so"
    assert libc.chain == ("/lib/x86_64-linux-gnu/libc.so.6",)
    assert libm is not None and libm.path == "/opt/real/libm.so.6"
    assert cxx is not None and cxx.path is None
    assert gcc is not None and gcc.path == "/usr/lib64/libgcc_s.so.1"
    description = reading.policy_match().describe()
    assert "GLIBCXX/CXXABI absent" in description and "libstdc++.so.6" in description
    assert not docker_client.containers.list(all=True, filters={"label": LABEL})


def test_missing_image_exits_8(docker_client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(DockerUnavailable, match="not in the Docker engine's local images"):
        read_image_ceilings("buildkit-test/no-such-image:never", client=docker_client)
    with pytest.raises(SystemExit) as exc:
        main(["ceilings", "buildkit-test/no-such-image:never"])
    assert exc.value.code == 8


def test_interrupted_read_removes_the_container(
    docker_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the libraries are copied (simulated: the fetch raises KeyboardInterrupt)."""
    import buildkit.image.libraries as libraries

    def interrupted(*_args: Any) -> Any:
        assert docker_client.containers.list(all=True, filters={"label": LABEL})  # it exists now
        raise KeyboardInterrupt

    monkeypatch.setattr(libraries, "_fetch_library", interrupted)
    with pytest.raises(KeyboardInterrupt):
        read_image_ceilings("debian:bookworm-slim", client=docker_client, use_cache=False, cache=tmp_path)
    assert not docker_client.containers.list(all=True, filters={"label": LABEL})


# --------------------------------------------------------------------------- unreadable libraries
TRIXIE = "debian:trixie-slim"


def _broken_image(client: Any, members: list[tuple[str, str, bytes | str]]) -> str:
    """``debian:trixie-slim`` with ``members`` (name, "file"|"link", bytes|target) written into
    /usr/lib/x86_64-linux-gnu of a created (never started) container, committed, tagged by content."""
    import hashlib

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind, value in members:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if kind == "link":
                assert isinstance(value, str)
                info.type, info.linkname = tarfile.SYMTYPE, value
                tar.addfile(info)
            else:
                assert isinstance(value, bytes)
                info.size, info.mode = len(value), 0o644
                tar.addfile(info, io.BytesIO(value))
    try:
        base = client.images.get(TRIXIE)
    except docker.errors.ImageNotFound:
        pytest.fail(f"{TRIXIE} is not seeded: run `buildkit image seed {TRIXIE}`", pytrace=False)
    digest = hashlib.sha256(base.id.encode() + buf.getvalue()).hexdigest()[:12]
    tag = f"buildkit-test/ceilings-broken:{digest}"
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        container = client.containers.create(TRIXIE, command=["/never-started"], network_disabled=True)
        try:
            assert container.put_archive(LIBDIR, buf.getvalue())
            repo, version = tag.split(":")
            container.commit(repository=repo, tag=version)
        finally:
            container.remove(force=True)
    return tag


def _no_versions_elf(tmp: Path) -> bytes:
    """A real shared library (host gcc) without .gnu.version_d."""
    from tests.helpers.shared_library import build_shared_library, have_gcc

    if not have_gcc():
        pytest.fail("gcc is needed to build the library without version definitions", pytrace=False)
    return build_shared_library(tmp / "plain.so", "int f(void) { return 1; }\n").read_bytes()


Members = list[tuple[str, str, bytes | str]]
BROKEN: dict[str, tuple[Members, str]] = {
    # name: (members, what the error must say)
    "libc-text": ([("libc.so.6", "file", b"not a library, just text\n")], "libc.so.6: .*not a readable ELF"),
    "libc-self-loop": ([("libc.so.6", "link", "libc.so.6")], "libc.so.6: .*symlink loop"),
    "libc-two-link-loop": (
        [("libc.so.6", "link", "libc-b.so"), ("libc-b.so", "link", "libc.so.6")],
        "libc.so.6: .*symlink loop",
    ),
    "libc-truncated-elf": ([("libc.so.6", "file", b"\x7fELF\x02\x01\x01" + b"\0" * 9)], "libc.so.6: .*ELF"),
    "libstdcxx-text": (
        [("libstdc++.so.6.0.33", "file", b"garbage\n" * 100)],
        r"libstdc\+\+.so.6: .*libstdc\+\+.so.6.0.33: not a readable ELF",
    ),
    "libstdcxx-is-libm": ([("libstdc++.so.6.0.33", "file", b"HOST_LIBM")], r"defines no GLIBCXX_\* version"),
    "libgcc_s-no-verdef": ([("libgcc_s.so.1", "file", b"PLAIN_ELF")], r"libgcc_s.so.1: .*no symbol versions"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_unreadable_library_fails_like_a_missing_libc(
    docker_client: Any,
    case: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A libc that is not a readable ELF with .gnu.version_d (text, truncated, a symlink loop the
    engine refuses with a 500), or a libstdc++/libgcc_s present but corrupt: exit 2, nothing cached
    (it once gave exit 0 with manylinux_2_41: libm's GLIBC versions stood in for the missing libc)."""
    from buildkit.errors import RecipeError, UsageError
    from buildkit.plan.expansion import expand
    from buildkit.recipe import parse_recipe

    members, message = BROKEN[case]
    host_libm = Path("/lib/x86_64-linux-gnu/libm.so.6").resolve()
    fixed: Members = []
    for name, kind, value in members:
        if value == b"HOST_LIBM":
            value = host_libm.read_bytes()
        elif value == b"PLAIN_ELF":
            value = _no_versions_elf(tmp_path)
        fixed.append((name, kind, value))
    tag = _broken_image(docker_client, fixed)
    cache = tmp_path / "cache"
    with pytest.raises(UsageError, match=message) as err:
        read_image_ceilings(tag, client=docker_client, use_cache=False, cache=cache)
    assert err.value.exit_code == 2
    assert not cache.exists() or not any(cache.iterdir())
    assert not docker_client.containers.list(all=True, filters={"label": LABEL})

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with pytest.raises(SystemExit) as exc:
        main(["ceilings", tag])
    assert exc.value.code == 2
    out, errtext = capsys.readouterr()
    assert "manylinux" not in out and "Traceback" not in errtext and "500 Server Error" not in errtext
    assert not (tmp_path / "xdg" / "rocm-buildkit" / "ceilings").exists()

    # a recipe's from_image: an error at the recipe position, not a note
    recipe = (
        "name: demo\nsource: {path: ../src}\nversion: {base: '1.0'}\npython: ['3.13']\nrocm: ['6.4']\n"
        "archs: {list: [gfx90a]}\nmanylinux:\n  policy: manylinux_2_28\n"
        f"  ceilings:\n    from_image: [{tag}]\nimage: manylinux_2_28-rocm\n"
    )
    with pytest.raises(RecipeError, match=message):
        expand(parse_recipe(recipe, path=tmp_path / "r.yaml"), env={}, ceilings_reader=ceilings_from_images)


def test_a_poisoned_cache_entry_is_not_trusted(docker_client: Any, tmp_path: Path) -> None:
    """A reading cached with an unreadable libc (by an older rocm-buildkit, same schema) still fails."""
    import json as _json

    from buildkit.errors import UsageError
    from buildkit.image.ceilings import CACHE_SCHEMA

    tag = _broken_image(docker_client, [("libc.so.6", "file", b"not a library, just text\n")])
    image_id = docker_client.images.get(tag).id
    libs = [
        {"soname": "libc.so.6", "path": f"{LIBDIR}/libc.so.6", "problem": "not a readable ELF file"},
        {"soname": "libm.so.6", "path": f"{LIBDIR}/libm.so.6", "definitions": ["GLIBC_2.41"]},
    ]
    entry = {"cache_schema": CACHE_SCHEMA, "image_id": image_id, "arch": "x86_64", "libraries": libs}
    (tmp_path / f"{image_id.split(':')[-1]}.json").write_text(_json.dumps(entry))
    with pytest.raises(UsageError, match=r"libc\.so\.6: not a readable ELF"):
        read_image_ceilings(tag, client=docker_client, cache=tmp_path)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("", "empty image reference"),
        ("UPPER:bad", "invalid image reference 'UPPER:bad'.*repository name must be lowercase"),
        ("a b", "invalid image reference"),
    ],
)
def test_invalid_image_reference_exits_2(
    docker_client: Any, reference: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from buildkit.errors import UsageError

    with pytest.raises(UsageError, match=message):
        read_image_ceilings(reference, client=docker_client)
    with pytest.raises(SystemExit) as exc:
        main(["ceilings", reference])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "NullResource" not in err and "could not look up" not in err
