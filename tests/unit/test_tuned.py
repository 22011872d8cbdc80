from __future__ import annotations

from pathlib import Path

import pytest

from buildkit.errors import RecipeError
from buildkit.tuned import check_tuned_csv, check_tuned_csvs

ROOT = Path(__file__).resolve().parents[2]


def test_reference_tuned_table_passes() -> None:
    files = check_tuned_csvs(ROOT / "csrc", ["refkernels/tuned/*.csv"])
    assert [f.name for f in files] == ["gemm.csv"]


def test_duplicate_key_reported_at_its_line(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("gfx,cu_num,M,N,K,kernel\ngfx942,304,1,2,3,a\ngfx90a,104,1,2,3,b\ngfx942,304,1,2,3,c\n")
    with pytest.raises(RecipeError) as info:
        check_tuned_csv(p)
    assert info.value.line == 4
    assert "first at line 2" in str(info.value)
    assert str(info.value).startswith(
        f"{p}:4: error: duplicate tuned key (gfx=gfx942, cu_num=304, M=1, N=2, K=3)"
    )


def test_quoted_multiline_field_keeps_line_numbers(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text('gfx,cu_num,M,N,K,note\ngfx942,304,1,2,3,"two\nlines"\ngfx942,304,1,2,3,x\n')
    with pytest.raises(RecipeError) as info:
        check_tuned_csv(p)
    assert info.value.line == 4


def test_missing_gfx_column(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("cu_num,M,N,K,kernelId\n304,1,2,3,7\n")
    with pytest.raises(RecipeError) as info:
        check_tuned_csv(p)
    assert info.value.line == 1
    assert "no 'gfx' column" in str(info.value)


def test_same_shape_on_two_gpus_is_fine(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("gfx,cu_num,M,N,K\ngfx942,304,1,2,3\ngfx942,80,1,2,3\ngfx950,256,1,2,3\n\n")
    check_tuned_csv(p)


def test_empty_and_short_rows(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("")
    with pytest.raises(RecipeError, match="empty"):
        check_tuned_csv(p)
    p.write_text("gfx,cu_num,M,N,K\ngfx942,304\n")
    with pytest.raises(RecipeError, match="2 fields"):
        check_tuned_csv(p)


def test_pattern_matching_nothing(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="matches no file"):
        check_tuned_csvs(tmp_path, ["configs/*.csv"])
