from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from buildkit.errors import RecipeError
from buildkit.recipe import MAX_RECIPE_BYTES, cibuildwheel_pythons, load_recipe, parse_recipe
from buildkit.recipe.schema import recipe_schema
from buildkit.units import parse_size

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "recipes"

MINIMAL = """\
name: demo
source: {path: ../csrc}
version: {base: "1.0"}
python: ["3.12"]
rocm: ["6.4"]
archs: {list: [gfx90a]}
manylinux: {policy: manylinux_2_28}
image: manylinux_2_28-rocm
"""


def test_schema_is_valid_draft_2020_12_and_documented() -> None:
    schema = recipe_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    # every top-level key an editor completes carries a description
    for name, prop in schema["properties"].items():
        assert prop.get("description"), name
    # the file in the package is plain JSON (editors read it directly)
    path = ROOT / "buildkit" / "schema" / "recipe.schema.json"
    assert json.loads(path.read_text()) == schema


@pytest.mark.parametrize("name", ["aiter.yaml", "reference-trixie.yaml"])
def test_shipped_recipes_validate_against_the_raw_schema(name: str) -> None:
    import yaml

    data = yaml.safe_load((RECIPES / name).read_text())
    jsonschema.Draft202012Validator(recipe_schema()).validate(data)


def test_aiter_recipe() -> None:
    r = load_recipe(RECIPES / "aiter.yaml")
    assert r.name == "amd-aiter"
    assert r.python == ("3.10", "3.11", "3.12", "3.13")
    assert r.rocm == ("6.4", "7.2")
    assert [(t.series, t.requirement) for t in r.torch] == [
        ("2.9", "torch==2.9.*"),
        ("2.10", "torch==2.10.*"),
    ]
    assert r.torch[0].index_url is None  # buildkit's ROCm data knows the 6.4 index serving torch 2.9
    assert r.torch[1].index_url == "https://download.pytorch.org/whl/rocm7.2"
    assert r.matrix.zip == ("rocm", "torch")
    assert r.manylinux.policy == "manylinux_2_28"
    # ceilings come from the installed auditwheel's policy file
    assert r.manylinux.ceilings["GLIBC"] == "2.28"
    assert r.manylinux.ceilings["GLIBCXX"] == "3.4.24"
    assert r.manylinux.ceilings["CXXABI"] == "1.3.11"
    assert r.exclude_sets == ("rocm", "torch")
    assert r.env["PREBUILD_KERNELS"] == "1"
    assert r.image.label == "manylinux_2_28-rocm" and r.image.kind == "profile"
    assert r.publish is not None and r.publish.kind == "index"
    assert r.size_budget == {"limit": 900 * 2**20, "warn": 500 * 2**20}
    assert r.sha256 == hashlib.sha256((RECIPES / "aiter.yaml").read_bytes()).hexdigest()
    assert r.source.git == "https://github.com/ROCm/aiter.git"
    assert r.source_dir() is None


def test_reference_recipe() -> None:
    r = load_recipe(RECIPES / "reference-trixie.yaml")
    assert r.python == ("3.13",)
    assert r.rocm == ("5.7",)
    assert r.archs.list == ("gfx908", "gfx90a", "gfx942")
    assert r.archs.toolchain == "debian-trixie"
    assert r.image.label == "debian-rocm" and not r.image.packages
    assert r.torch == ()
    assert r.manylinux.policy == "manylinux_2_41"
    assert r.manylinux.ceilings["GLIBC"] == "2.41"
    src = r.source_dir()
    assert src is not None and (src / "refkernels").is_dir()


def test_ceiling_override_tightens(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        "{policy: manylinux_2_28}", '{policy: manylinux_2_28, ceilings: {GLIBCXX: "3.4.19"}}'
    )
    r = parse_recipe(text, path=tmp_path / "r.yaml")
    assert r.manylinux.ceilings["GLIBCXX"] == "3.4.19"
    assert r.manylinux.ceilings["GLIBC"] == "2.28"
    assert r.manylinux.overrides == {"GLIBCXX": "3.4.19"}


def test_policy_alias_is_normalised(tmp_path: Path) -> None:
    r = parse_recipe(MINIMAL.replace("manylinux_2_28}", "manylinux2014}"), path=tmp_path / "r.yaml")
    assert r.manylinux.policy == "manylinux_2_17"


def test_publish_pypi_without_local_label_is_fine(tmp_path: Path) -> None:
    r = parse_recipe(MINIMAL + "publish: {pypi: true}\n", path=tmp_path / "r.yaml")
    assert r.publish is not None and r.publish.kind == "pypi"


def test_pypi_with_local_label_says_why(tmp_path: Path) -> None:
    text = MINIMAL.replace('{base: "1.0"}', '{base: "1.0", local: "rocm{rocm}"}') + "publish: {pypi: true}\n"
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, path=tmp_path / "r.yaml")
    assert "PyPI refuses" in str(info.value) and "PEP 503" in str(info.value)
    assert info.value.line == 9


def test_merge_keys_and_anchors(tmp_path: Path) -> None:
    text = MINIMAL + 'x-common: &common {PREBUILD_KERNELS: "1"}\n'
    with pytest.raises(RecipeError, match="unknown key 'x-common'"):
        parse_recipe(text, path=tmp_path / "r.yaml")
    text = MINIMAL.replace('python: ["3.12"]', 'python: &py ["3.12"]') + "env:\n  <<: {A: '1'}\n  B: '2'\n"
    r = parse_recipe(text, path=tmp_path / "r.yaml")
    assert dict(r.env) == {"A": "1", "B": "2"}


@pytest.mark.parametrize(
    ("text", "size"), [("450MiB", 450 * 2**20), ("1.5GB", 1_500_000_000), ("10 KiB", 10240)]
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_errors_name_the_file_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("r.yaml").write_text(MINIMAL.replace('["3.12"]', "[3.12]"))
    with pytest.raises(RecipeError) as info:
        load_recipe("r.yaml")
    assert str(info.value).startswith("r.yaml:4:10: error: python[0]: expected a string")


# ---------------------------------------------------------------- issue 6: runtime images, gate, smoke gpu


def _with_manylinux(body: str) -> str:
    return MINIMAL.replace("manylinux: {policy: manylinux_2_28}", "manylinux:\n" + body)


@pytest.mark.parametrize(
    ("written", "images"),
    [
        ("debian:bookworm-slim", ("debian:bookworm-slim",)),
        ("[debian:bookworm-slim, debian:trixie-slim]", ("debian:bookworm-slim", "debian:trixie-slim")),
        (
            "registry.example.org:5000/rocm/vllm@sha256:" + "ab" * 32,
            ("registry.example.org:5000/rocm/vllm@sha256:" + "ab" * 32,),
        ),
    ],
)
def test_ceilings_from_image(tmp_path: Path, written: str, images: tuple[str, ...]) -> None:
    text = _with_manylinux(
        f'  policy: manylinux_2_28\n  ceilings:\n    GLIBCXX: "3.4.22"\n    from_image: {written}\n'
    )
    r = parse_recipe(text, path=tmp_path / "r.yaml")
    assert r.manylinux.from_images == images
    # image references are not version ceilings: not in overrides, no "above the policy" check
    assert r.manylinux.overrides == {"GLIBCXX": "3.4.22"}
    assert r.manylinux.ceilings == {"CXXABI": "1.3.11", "GCC": "7.0.0", "GLIBC": "2.28", "GLIBCXX": "3.4.22"}


def test_from_image_is_not_read_at_load_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a recipe naming an image that exists nowhere, with no engine reachable, succeeds."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    text = _with_manylinux("  policy: manylinux_2_28\n  ceilings: {from_image: nowhere/none:0}\n")
    assert parse_recipe(text, path=tmp_path / "r.yaml").manylinux.from_images == ("nowhere/none:0",)
    assert load_recipe(RECIPES / "reference-trixie.yaml").manylinux.from_images == ()


def test_gate_no_regression_against(tmp_path: Path) -> None:
    assert parse_recipe(MINIMAL, path=tmp_path / "r.yaml").gate.no_regression_against is None
    for url in ("https://pypi.example.org/simple/", "file:///srv/index/simple"):
        r = parse_recipe(MINIMAL + f"gate: {{no_regression_against: '{url}'}}\n", path=tmp_path / "r.yaml")
        assert r.gate.no_regression_against == url


def test_smoke_gpu_flag(tmp_path: Path) -> None:
    text = MINIMAL + (
        "smoke:\n"
        "  - {name: imports, image: debian:trixie-slim, labels: [vllm]}\n"
        "  - {name: kernels, image: debian:trixie-slim, labels: [vllm, sglang], gpu: true}\n"
        "  - {name: cpu, image: debian:trixie-slim, gpu: false}\n"
    )
    r = parse_recipe(text, path=tmp_path / "r.yaml")
    assert [(s.name, s.gpu, s.labels) for s in r.smoke] == [
        ("imports", False, ("vllm",)),
        ("kernels", True, ("vllm", "sglang")),
        ("cpu", False, ()),
    ]


def test_runtime_test_recipe_validates_against_the_raw_schema() -> None:
    import yaml

    data = yaml.safe_load((ROOT / "tests" / "data" / "recipes" / "runtime.yaml").read_text())
    jsonschema.Draft202012Validator(recipe_schema()).validate(data)
    ceilings = recipe_schema()["properties"]["manylinux"]["properties"]["ceilings"]["properties"]
    assert ceilings["from_image"]["description"]
    assert recipe_schema()["properties"]["gate"]["properties"]["no_regression_against"]["description"]


# ------------------------------------------------------- review M10: what a recipe path may be


def _plan_cli(path: str | Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def test_device_is_refused_without_reading_it() -> None:
    """/dev/zero used to be read until MemoryError; now refused from its fstat, exit 3."""
    with pytest.raises(RecipeError, match=r"not a regular file \(a character device\)") as info:
        load_recipe("/dev/zero")
    assert info.value.exit_code == 3
    proc = _plan_cli("/dev/zero")
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "/dev/zero: error: the recipe is not a regular file (a character device)" in proc.stderr


def test_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    """A FIFO nobody writes to used to hang `plan` forever (the timeout turns a hang into a failure)."""
    fifo = tmp_path / "recipe.yaml"
    os.mkfifo(fifo)
    proc = _plan_cli(fifo, timeout=20)  # first in a child: a hang must fail, not block the suite
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    with pytest.raises(RecipeError, match=r"not a regular file \(a FIFO\)"):
        load_recipe(fifo)


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match=r"not a regular file \(a directory\)"):
        load_recipe(tmp_path)


def test_oversized_recipe_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "big.yaml"
    padding = ("# " + "x" * 98 + "\n") * (MAX_RECIPE_BYTES // 100 + 1)
    p.write_text(MINIMAL.replace("../csrc", str(ROOT / "csrc")) + padding)
    assert p.stat().st_size > MAX_RECIPE_BYTES == 2**20
    with pytest.raises(RecipeError, match=r"larger than 1 MiB") as info:
        load_recipe(p)
    assert info.value.exit_code == 3
    # just under the cap still loads
    p.write_text(MINIMAL + padding[: MAX_RECIPE_BYTES - len(MINIMAL) - 100])
    assert load_recipe(p).name == "demo"


# ------------------------------------------------------- review L6: Python versions cibuildwheel builds


def test_python_versions_come_from_cibuildwheel() -> None:
    from cibuildwheel.util.resources import read_all_configs

    # cibuildwheel's own reading of its build-platforms.toml, independent of ours
    theirs = {
        c["version"]
        for c in read_all_configs()["linux"]
        if re.match(r"cp3\d+-manylinux_x86_64$", c["identifier"])
    }
    assert set(cibuildwheel_pythons()) == theirs
    assert {"3.10", "3.12", "3.13", "3.14"} <= theirs
    assert "3.99" not in theirs


def test_python_version_cibuildwheel_cannot_build(tmp_path: Path) -> None:
    import cibuildwheel

    text = MINIMAL.replace('python: ["3.12"]', 'python: ["3.12", "3.99"]')
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, path=tmp_path / "r.yaml")
    err = info.value
    assert (err.line, err.column) == (4, 18)
    assert err.detail == (
        f"python[1]: cibuildwheel {cibuildwheel.__version__} cannot build CPython 3.99 "
        f"(it builds {', '.join(cibuildwheel_pythons())})"
    )
    assert err.exit_code == 3
    with pytest.raises(RecipeError, match=r"cannot build CPython 3\.7 "):
        parse_recipe(MINIMAL.replace('"3.12"', '"3.7"'), path=tmp_path / "r.yaml")


def test_schema_offers_every_exclude_set_of_the_rocm_data() -> None:
    """`repair.exclude.sets` accepts exactly the sets of buildkit/rocm/libraries.yaml (what
    `check --exclude-set` offers), rocm-system included."""
    from buildkit import rocm

    repair = recipe_schema()["properties"]["repair"]["properties"]["exclude"]["properties"]["sets"]
    assert sorted(repair["items"]["enum"]) == sorted(rocm.library_sets())
    r = parse_recipe(MINIMAL + "repair: {exclude: {sets: [rocm, rocm-system]}}\n", path=Path("r.yaml"))
    assert r.exclude_sets == ("rocm", "rocm-system")


@pytest.mark.parametrize(
    ("key", "value", "hint_part"),
    [
        ("MAX_JOBS", None, None),  # the recipe's to set: allowed
        ("ROCM_PATH", None, None),
        ("HIP_PLATFORM", "amd", None),  # the fixed value buildkit sets: allowed
        ("HIP_PLATFORM", "nvidia", 'write HIP_PLATFORM: "amd"'),
        ("PYTHONHASHSEED", "1", "PYTHONHASHSEED=0"),
        ("CCACHE_BASEDIR", "/", "--no-cache"),
        ("PIP_EXTRA_INDEX_URL", "https://example.org/simple", "index_url"),
        ("PIP_CONSTRAINT", "c.txt", "torch pin"),
        ("PATH", "/usr/lib/ccache:/usr/bin", "no $PATH expansion"),
        ("PYTORCH_ROCM_ARCH", "gfx90a", "archs:"),
        ("SOURCE_DATE_EPOCH", "0", "last commit"),
    ],
)
def test_recipe_env_refuses_what_the_build_sets(key: str, value: str | None, hint_part: str | None) -> None:
    text = MINIMAL + f'env:\n  PREBUILD_KERNELS: "1"\n  {key}: "{value or "4"}"\n'
    if hint_part is None:
        assert parse_recipe(text, path=RECIPES / "t.yaml").env[key] == (value or "4")
        return
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, path=RECIPES / "t.yaml")
    err = info.value
    assert (err.line, err.column) == (11, 3), str(err)  # at the key
    assert err.detail.startswith(f"env.{key}: {key} ")
    assert err.hint is not None and hint_part in err.hint, err.hint


def test_matrix_axis_cannot_be_a_variable_the_build_sets() -> None:
    text = MINIMAL + 'matrix:\n  axes:\n    CCACHE_DIR: ["/a", "/b"]\n'
    with pytest.raises(
        RecipeError, match=r"matrix\.axes\.CCACHE_DIR: CCACHE_DIR is set by the build"
    ) as info:
        parse_recipe(text, path=RECIPES / "t.yaml")
    assert (info.value.line, info.value.column) == (11, 5)
    # a fixed value still varies per job on an axis
    with pytest.raises(RecipeError, match="HIP_PLATFORM is always 'amd'"):
        parse_recipe(MINIMAL + 'matrix:\n  axes:\n    HIP_PLATFORM: ["amd"]\n', path=RECIPES / "t.yaml")


@pytest.mark.parametrize("value", ["/usr/lib/ccache:$PATH", "${HOME}/x", "`nproc`", "a$(id)"])
def test_recipe_env_values_are_literal_so_expansions_are_refused(value: str) -> None:
    text = MINIMAL + f"env:\n  EXTRA_FLAGS: '{value}'\n"
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, path=RECIPES / "t.yaml")
    err = info.value
    assert (err.line, err.column) == (10, 16), str(err)  # at the value
    assert "never expanded" in err.detail and repr(value) in err.detail
    axis = MINIMAL + f"matrix:\n  axes:\n    EXTRA_FLAGS: ['plain', '{value}']\n"
    with pytest.raises(RecipeError, match="never expanded"):
        parse_recipe(axis, path=RECIPES / "t.yaml")


def test_recipe_env_literal_values_without_expansion_are_kept() -> None:
    text = MINIMAL + "env:\n  FLAGS: '-O3 -DX=\"a b\" \\\\n'\n"
    assert parse_recipe(text, path=RECIPES / "t.yaml").env["FLAGS"] == '-O3 -DX="a b" \\\\n'


def test_reference_recipe_publishes_outside_the_build_output() -> None:
    """`buildkit build --out dist` then `publish dist --recipe`: an index inside dist/ would be
    collected again on the next run (its copies have no manifest)."""
    from buildkit.publish.target import target_of

    target = target_of(load_recipe(RECIPES / "reference-trixie.yaml"))
    assert target.kind == "directory"
    index = Path(target.location).resolve()
    assert index == ROOT / "site" / "index"
    assert not index.is_relative_to(ROOT / "dist")


def test_the_readme_documents_every_recipe_key_with_its_cibuildwheel_name() -> None:
    """Every top-level key of the recipe schema has a row in the reference's key table, and every
    cibuildwheel option the recipe renders is named in it."""
    readme = (ROOT / "docs" / "REFERENCE.md").read_text(encoding="utf-8")
    table = readme.split("### Every recipe key", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    documented = {key for row in rows for key in re.findall(r"`([a-z_.]+)`", row.split(" | ")[0])}
    schema = json.loads((ROOT / "buildkit" / "schema" / "recipe.schema.json").read_text())
    keys = set(schema["properties"])
    documented = {k.split(".")[0] for k in documented}
    assert keys - documented == set(), "docs/REFERENCE.md lacks rows for these recipe keys"
    for option in (
        "before-all",
        "before-build",
        "config-settings",
        "build-frontend",
        "test-command",
        "test-requires",
    ):
        assert any(f"`{option}`" in row for row in rows), option


def test_network_is_off_unless_the_recipe_says_true(tmp_path: Path) -> None:
    text = (
        (ROOT / "recipes" / "reference-trixie.yaml")
        .read_text()
        .replace("path: ../csrc", f"path: {ROOT / 'csrc'}")
    )
    assert parse_recipe(text, path=tmp_path / "r.yaml").network is False
    assert parse_recipe(text + "network: true\n", path=tmp_path / "r.yaml").network is True
    with pytest.raises(RecipeError) as info:
        parse_recipe(text.replace("  HIP_PLATFORM: amd", "  PIP_NO_INDEX: '0'"), path=tmp_path / "r.yaml")
    assert "PIP_NO_INDEX is set by the build itself" in str(info.value)
    assert info.value.hint is not None and "network: true" in info.value.hint
