"""Fuzz target: mutated real wheels through ``check``'s zip, ELF, offload-bundle and RECORD readers and
the gate (:mod:`tests.helpers.fuzz_wheels`). Every input gives a verdict or an ``unreadable`` failure
naming the bytes; no traceback, no hang (20 s alarm per input), bounded memory (the process's peak
RSS stays under 1 GiB).

Budget: 300 hypothesis examples (``BUILDKIT_FUZZ_EXAMPLES`` for more), about 15 s here. The long run
is ``bench/fuzz.py --minutes N``, which writes any crashing input under ``tests/data/fuzz`` to become a
regression case here; none so far (bench/README.md lists the runs).
"""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.corpus.fetch import DEFAULT_CACHE
from tests.helpers.fuzz_wheels import LEVELS, Seed, drive, mutate, seed_wheels
from tests.helpers.shared_library import have_gcc

FUZZ = settings(
    max_examples=int(os.environ.get("BUILDKIT_FUZZ_EXAMPLES", "300")),
    deadline=None,  # the alarm below: a shared machine's load must not fail a slow example
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PEAK_RSS_MIB = 1024


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[Seed]:
    if not have_gcc():
        pytest.skip("gcc builds the seed library")
    return seed_wheels(tmp_path_factory.mktemp("seeds"), DEFAULT_CACHE)


class Hang(Exception):
    pass


@pytest.fixture
def alarm() -> Iterator[None]:
    def ring(signum: int, frame: FrameType | None) -> None:
        raise Hang("the readers gave no verdict within 20 s")

    previous = signal.signal(signal.SIGALRM, ring)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@FUZZ
@given(
    which=st.integers(min_value=0, max_value=15),
    level=st.sampled_from(LEVELS),
    pick=st.integers(min_value=0, max_value=1 << 16),
    edits=st.lists(
        st.tuples(st.integers(min_value=0, max_value=1 << 32), st.binary(min_size=1, max_size=16)),
        min_size=1,
        max_size=8,
    ),
    cut=st.one_of(st.just(0), st.integers(min_value=1, max_value=99)),
)
def test_mutated_wheels_give_a_verdict_or_an_unreadable_naming_the_bytes(
    tmp_path: Path,
    seeds: list[Seed],
    alarm: None,
    which: int,
    level: str,
    pick: int,
    edits: list[tuple[int, bytes]],
    cut: int,
) -> None:
    seed = seeds[which % len(seeds)]
    path = tmp_path / seed.name
    path.write_bytes(mutate(seed, level, pick, edits, cut))
    signal.alarm(20)
    try:
        assert drive(path) in ("verdict", "unreadable")
    finally:
        signal.alarm(0)
    assert _peak_rss_mib() < PEAK_RSS_MIB


def test_the_seeds_pass_unmutated(tmp_path: Path, seeds: list[Seed]) -> None:
    """The mutations start from readable wheels: each seed gets a verdict, not an unreadable."""
    for seed in seeds:
        path = tmp_path / seed.name
        path.write_bytes(seed.data)
        assert drive(path) == "verdict", seed.name
