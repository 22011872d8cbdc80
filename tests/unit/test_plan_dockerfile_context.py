"""``buildkit plan`` names the build context of a recipe's own Dockerfile as the build uses it (issue
30): ``image.context``, else the Dockerfile's folder, not ``.``."""

from __future__ import annotations

from pathlib import Path

from buildkit.plan.expansion import expand
from buildkit.plan.render import render_table
from buildkit.recipe import parse_recipe

ROOT = Path(__file__).resolve().parents[2]


def _recipe(tmp_path: Path, image: str) -> str:
    return (
        f'name: demo\nsource: {{path: {ROOT / "csrc"}}}\nversion: {{base: "1.0"}}\npython: ["3.13"]\n'
        'rocm: ["6.4"]\narchs: {list: [gfx90a]}\nmanylinux: {policy: manylinux_2_28}\n'
        f"image: {image}\n"
    )


def _image_line(tmp_path: Path, image: str) -> tuple[str, Path | None]:
    recipe = parse_recipe(_recipe(tmp_path, image), path=tmp_path / "r.yaml")
    table = render_table(expand(recipe, env={}, enumerator=list))
    line = next(x for x in table.splitlines() if x.startswith("image: "))
    return line, recipe.image.context_path(tmp_path)


def test_the_dockerfiles_folder_is_the_context_shown_and_used(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "builder.Dockerfile").write_text("FROM debian:trixie-slim\n")
    line, used = _image_line(tmp_path, "{dockerfile: docker/builder.Dockerfile}")
    assert line == (
        "image: the project's Dockerfile docker/builder.Dockerfile (context docker, the Dockerfile's folder)"
    )
    assert used == tmp_path / "docker"


def test_an_explicit_context_is_shown_as_given(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "builder.Dockerfile").write_text("FROM debian:trixie-slim\n")
    line, used = _image_line(tmp_path, "{dockerfile: docker/builder.Dockerfile, context: .}")
    assert line == "image: the project's Dockerfile docker/builder.Dockerfile (context .)"
    assert used == tmp_path / "."
    (tmp_path / "builder.Dockerfile").write_text("FROM debian:trixie-slim\n")
    line, _ = _image_line(tmp_path, "{dockerfile: builder.Dockerfile}")
    assert line.endswith("(context ., the Dockerfile's folder)")
