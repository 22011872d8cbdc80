"""``build --ccache-remote``, before any container: the URLs taken and refused, and what the build
container gets (still no network; the relay's socket volume and ccache's redis+unix URL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildkit.building import cibw, remote_cache
from buildkit.errors import UsageError
from buildkit.plan.expansion import expand
from buildkit.recipe import parse_recipe

SID = """\
name: demo
source: {path: ../csrc}
version: {base: "1.0", local: "rocm{rocm}"}
python: ["3.13"]
rocm: ["7.2"]
archs: {list: [gfx90a]}
manylinux: {policy: manylinux_2_31, sysroot: glibc2.31}
repair: {exclude: {sets: [rocm]}}
image: debian-sid-rocm
"""


def test_a_redis_url_goes_through_the_relay_s_socket() -> None:
    remote = remote_cache.parse_remote("redis://172.17.0.1:6400/3")
    assert (remote.host, remote.port) == ("172.17.0.1", 6400)
    assert remote.through_relay() == f"redis+unix:{remote_cache.SOCKET}?db=3"
    assert remote_cache.parse_remote("redis://cache.example").port == 6379
    assert (
        remote_cache.parse_remote("redis://cache.example").through_relay()
        == f"redis+unix:{remote_cache.SOCKET}"
    )


def test_a_store_on_the_hosts_loopback_is_served() -> None:
    """The relay runs in the host's network namespace: 127.0.0.1 is the host's, not the relay's."""
    remote = remote_cache.parse_remote("redis://127.0.0.1:6390/2")
    assert (remote.host, remote.port) == ("127.0.0.1", 6390)
    assert remote.through_relay() == f"redis+unix:{remote_cache.SOCKET}?db=2"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://cache.example/ccache", "the scheme must be one of redis"),
        ("redis://user:s3cret@cache.example:6379", "credentials in the URL are refused"),
        ("redis://:6379", "no host"),
    ],
)
def test_urls_the_relay_cannot_serve_are_refused(url: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        remote_cache.parse_remote(url)
    assert "s3cret" not in str(info.value)


def test_the_build_container_keeps_no_network_and_gets_the_socket(tmp_path: Path) -> None:
    job = expand(parse_recipe(SID, path=tmp_path / "r.yaml"), env={}, enumerator=lambda: []).jobs[0]
    settings = cibw.CibwSettings(
        image="i:1",
        source_date_epoch=1,
        ccache_volume="rocm-buildkit-ccache-0123456789ab",
        with_ca_bundle=False,
        network=False,
        cache_socket_volume="rocm-buildkit-relay-abc",
        ccache_remote=f"redis+unix:{remote_cache.SOCKET}",
    )
    options = cibw.cibuildwheel_options(job, settings)
    engine = options["CIBW_CONTAINER_ENGINE"]
    assert "--network=none" in engine
    assert f"--volume=rocm-buildkit-relay-abc:{remote_cache.SOCKET_DIR}" in engine
    assert f'CCACHE_REMOTE_STORAGE="redis+unix:{remote_cache.SOCKET}"' in options["CIBW_ENVIRONMENT_LINUX"]
    plain = cibw.cibuildwheel_options(
        job, cibw.CibwSettings(image="i:1", source_date_epoch=1, ccache_volume="v", with_ca_bundle=False)
    )
    assert "CCACHE_REMOTE_STORAGE" not in plain["CIBW_ENVIRONMENT_LINUX"]
    assert "relay" not in plain["CIBW_CONTAINER_ENGINE"]


def test_the_relay_forwards_to_the_one_address_it_is_given() -> None:
    assert "asyncio.open_connection(HOST, PORT)" in remote_cache.RELAY
    assert f'start_unix_server(serve, "{remote_cache.SOCKET}")' in remote_cache.RELAY
    compile(remote_cache.RELAY, "<relay>", "exec")  # the relay is valid Python
