"""The host-isa report (buildkit/inspect/isa.py) on real ELFs gcc compiles here with -march/-m flags,
and the host-isa rule's judgement of them: informs by default, refuses when strict, naming the ELF,
the instruction and its symbol."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.options import GateFlags, apply_options
from buildkit.inspect import inspect_wheel
from buildkit.inspect.isa import host_isa_of, scan_elf
from buildkit.judge import judge_wheel
from tests.helpers.shared_library import have_gcc
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="needs gcc")

PLAIN = """
double dot(const double *a, const double *b, int n) {
    double s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s;
}
"""
# each level through its own intrinsic, in a function whose name the report must give
V2 = """
#include <immintrin.h>
__m128i shuffle_bytes(__m128i a, __m128i b) { return _mm_shuffle_epi8(a, b); }
int count_bits(unsigned x) { return _mm_popcnt_u32(x); }
"""
V3 = """
#include <immintrin.h>
__m256i add_lanes(__m256i a, __m256i b) { return _mm256_add_epi32(a, b); }
"""
V4 = """
#include <immintrin.h>
__m512 add_wide(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
"""


def _compile(tmp_path: Path, name: str, source: str, *flags: str) -> bytes:
    src = tmp_path / f"{name}.c"
    src.write_text(source + PLAIN)  # the intrinsic first: the first example is in its function
    out = tmp_path / f"lib{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", *flags, "-o", str(out), str(src)], check=True)
    return out.read_bytes()


@pytest.mark.parametrize(
    ("source", "flags", "level", "function"),
    [
        ("", (), 1, None),
        (V2, ("-march=x86-64-v2",), 2, "shuffle_bytes"),
        (V3, ("-march=x86-64-v3",), 3, "add_lanes"),
        (V4, ("-mavx512f",), 4, "add_wide"),
    ],
)
def test_the_report_gives_the_highest_level_with_counts_and_the_symbol(
    tmp_path: Path, source: str, flags: tuple[str, ...], level: int, function: str | None
) -> None:
    report = scan_elf("pkg/lib.so", _compile(tmp_path, "lib", source, *flags))
    assert report is not None
    assert report.level == level, report
    assert report.level_name == ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")[level - 1]
    if function is None:
        assert report.counts == (0, 0, 0) and not report.examples
        return
    assert report.counts[level - 2] >= 1
    assert all(n == 0 for n in report.counts[level - 1 :])  # nothing above the level
    top = report.above(level - 1)
    assert top and top[0].level == level
    assert top[0].symbol.startswith(f"{function}+0x"), top[0]
    assert top[0].address > 0 and top[0].text


def test_the_level_of_avx512_is_its_instructions_not_a_note(tmp_path: Path) -> None:
    """-mavx512f writes no GNU_PROPERTY_X86_ISA_1_NEEDED note (that needs -mneeded): the inspection's
    x86-isa note reading sees the baseline, the disassembly sees zmm instructions."""
    data = _compile(tmp_path, "wide", V4, "-mavx512f")
    wheel = write_wheel(tmp_path / "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": data})
    report = inspect_wheel(wheel)
    assert report.elves[0].x86_isa_needed in (None, 1)
    with zipfile.ZipFile(wheel) as zf:
        scan = host_isa_of(zf, report, True)
    assert scan is not None and scan[0].level == 4
    assert any("zmm" in e.text for e in scan[0].examples)


def _wheel(tmp_path: Path, source: str, *flags: str) -> Path:
    data = _compile(tmp_path, "k", source, *flags)
    return write_wheel(tmp_path / "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": data})


def _judge(wheel: Path, **flags: object) -> list[tuple[str, str, str]]:
    """The host-isa findings of ``judge_wheel``: the judgement every command makes scans when asked."""
    config = apply_options(GateConfig(), GateFlags(**flags))
    verdict = judge_wheel(wheel, config).verdict
    return [(f.severity, f.message, f.symbol or "") for f in verdict.findings if f.rule == "host-isa"]


def test_the_report_informs_and_strict_refuses_naming_the_instruction(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, V4, "-mavx512f")
    assert _judge(wheel) == []  # off by default: nothing disassembled, nothing said
    [(severity, message, symbol)] = _judge(wheel, isa_report=True)
    assert severity == "warning"
    assert "demo/_k.so holds x86-64-v4 instructions" in message and "above the baseline x86-64" in message
    [(severity, message, symbol)] = _judge(wheel, isa_strict=True)
    assert severity == "error"
    assert "demo/_k.so" in message and "zmm" in message and "SIGILL" in message
    assert symbol.startswith("add_wide+0x")


def test_strict_holds_the_baseline_given(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, V3, "-march=x86-64-v3")
    assert _judge(wheel, isa_strict=True, isa_baseline="x86-64-v3") == []
    [(severity, message, _)] = _judge(wheel, isa_strict=True, isa_baseline="x86-64-v2")
    assert severity == "error" and "x86-64-v3 instructions" in message and "baseline x86-64-v2" in message


def test_plain_code_passes_strict(tmp_path: Path) -> None:
    assert _judge(_wheel(tmp_path, ""), isa_strict=True) == []


def test_asked_for_but_not_scanned_is_an_error_not_a_pass(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, V4, "-mavx512f")
    config = apply_options(GateConfig(), GateFlags(isa_strict=True))
    verdict = evaluate(inspect_wheel(wheel), config)
    [finding] = [f for f in verdict.findings if f.rule == "host-isa"]
    assert finding.severity == "error" and "not disassembled" in finding.message
    assert not verdict.passed


def test_a_recipes_host_isa_sets_the_jobs_gate(tmp_path: Path) -> None:
    from buildkit.errors import UsageError
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    root = Path(__file__).resolve().parents[2]
    text = (root / "recipes" / "reference-trixie.yaml").read_text()
    text = text.replace("path: ../csrc", f"path: {root / 'csrc'}")
    path = tmp_path / "r.yaml"
    path.write_text(text + "host_isa:\n  level: x86-64-v2\n  strict: true\n")
    recipe = load_recipe(path)
    config = GateConfig.from_job(expand(recipe).jobs[0], recipe)
    assert config.isa_strict and config.isa_scan and config.isa_baseline == "x86-64-v2"
    plain = tmp_path / "plain.yaml"
    plain.write_text(text)
    recipe = load_recipe(plain)
    config = GateConfig.from_job(expand(recipe).jobs[0], recipe)
    assert not config.isa_scan and config.isa_baseline is None  # the policy's baseline, x86-64
    # the command line tightens the job's: --isa-strict over a silent recipe
    assert apply_options(config, GateFlags(isa_strict=True)).isa_strict
    with pytest.raises(UsageError, match="x86-64 level"):
        GateConfig(isa_baseline="x86-64-v5").validated()


def test_not_x86_64_is_no_report() -> None:
    assert scan_elf("a.so", b"\x7fELF" + b"\0" * 60) is None
    assert scan_elf("a.so", b"not an elf") is None
