from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit.building.tuned import MAX_QUOTED, check_tuned_csv, check_tuned_csvs
from buildkit.errors import RecipeError
from buildkit.recipe import load_recipe

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


# ---------------------------------------------------------------- review H3: the source root is a boundary

SECRET = "root:$y$j9T$TOPSECRETHASH:19000:0:99999:7:::\n"


def _source_with_secret_outside(tmp_path: Path) -> Path:
    (tmp_path / "shadow").write_text(SECRET)
    src = tmp_path / "src"
    (src / "tuned").mkdir(parents=True)
    (src / "tuned" / "ok.csv").write_text("gfx,cu_num,M,N,K\ngfx942,304,1,2,3\n")
    return src


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("../shadow", "'..' component"),
        ("tuned/../../shadow", "'..' component"),
        ("/etc/*", "is absolute"),  # used to be a NotImplementedError traceback
        ("/etc/passwd", "is absolute"),
    ],
)
def test_pattern_leaving_the_source_is_refused_unread(tmp_path: Path, pattern: str, why: str) -> None:
    src = _source_with_secret_outside(tmp_path)
    with pytest.raises(RecipeError) as info:
        check_tuned_csvs(src, ["tuned/*.csv", pattern])
    assert why in str(info.value)
    assert str(info.value).startswith(f"error: checks.tuned_csv[1]: {pattern!r}")
    assert "TOPSECRET" not in str(info.value) and "root:" not in str(info.value)


def test_symlink_out_of_the_source_is_not_read(tmp_path: Path) -> None:
    src = _source_with_secret_outside(tmp_path)
    (src / "tuned" / "evil.csv").symlink_to(tmp_path / "shadow")
    with pytest.raises(RecipeError) as info:
        check_tuned_csvs(src, ["tuned/*.csv"])
    assert str(info.value).startswith("tuned/evil.csv: error: tuned CSV resolves outside the source tree")
    assert "TOPSECRET" not in str(info.value)


def test_symlinked_directory_out_of_the_source_is_not_read(tmp_path: Path) -> None:
    src = _source_with_secret_outside(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.csv").write_text("secret,TOPSECRET\n")
    (src / "linked").symlink_to(outside)
    with pytest.raises(RecipeError, match="resolves outside the source tree") as info:
        check_tuned_csvs(src, ["linked/*.csv"])
    assert "TOPSECRET" not in str(info.value)


def test_symlink_inside_the_source_is_fine(tmp_path: Path) -> None:
    src = _source_with_secret_outside(tmp_path)
    (src / "tuned" / "alias.csv").symlink_to("ok.csv")
    assert [p.name for p in check_tuned_csvs(src, ["tuned/*.csv"])] == ["alias.csv", "ok.csv"]


def test_quoted_content_is_capped(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    header = ",".join(f"column{i}" for i in range(100))
    p.write_text(header + "\n")
    with pytest.raises(RecipeError) as info:
        check_tuned_csv(p)
    quoted = info.value.detail.split("(header: ", 1)[1].rstrip(")")
    assert len(quoted) == MAX_QUOTED == 80
    assert quoted.endswith("...") and "column99" not in info.value.detail


def test_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    """A FIFO nobody writes to used to block the open forever: run in a child with a timeout."""
    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)
    code = f"from buildkit.building.tuned import check_tuned_csv\ncheck_tuned_csv({str(fifo)!r})\n"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=20, check=False
    )
    assert "RecipeError" in proc.stderr and "tuned CSV is not a regular file" in proc.stderr, proc.stderr
    # a glob skips it, so the pattern matches nothing (and says so)
    with pytest.raises(RecipeError, match="matches no file"):
        check_tuned_csvs(tmp_path, ["*.csv"])


# ---------------------------------------------------------------- review L6: errors at the recipe's position


def test_pattern_matching_nothing_is_at_its_recipe_position(tmp_path: Path) -> None:
    src = _source_with_secret_outside(tmp_path)
    recipe_path = tmp_path / "recipe.yaml"
    recipe_path.write_text(
        "name: demo\n"
        "source: {path: src}\n"
        'version: {base: "1.0"}\n'
        'python: ["3.12"]\n'
        'rocm: ["6.4"]\n'
        "archs: {list: [gfx90a]}\n"
        "manylinux: {policy: manylinux_2_28}\n"
        "image: manylinux_2_28-rocm\n"
        "checks:\n"
        "  tuned_csv:\n"
        "    - tuned/*.csv\n"
        "    - configs/*.csv\n"
    )
    recipe = load_recipe(recipe_path)
    source = recipe.source_dir()
    assert source == src
    with pytest.raises(RecipeError) as info:
        check_tuned_csvs(source, recipe.tuned_csv, recipe=recipe)
    err = info.value
    assert (err.file, err.line, err.column) == (str(recipe_path), 12, 7)
    assert err.detail == f"checks.tuned_csv[1]: 'configs/*.csv' matches no file under {src}"
    assert err.exit_code == 3
    # the patterns default to the recipe's
    (src / "configs").mkdir()
    (src / "configs" / "c.csv").write_text("gfx,cu_num,M,N,K\n")
    assert [p.name for p in check_tuned_csvs(source, recipe=recipe)] == ["c.csv", "ok.csv"]
