"""``buildkit split`` on small wheels made here: each standalone code object goes to the device wheel of
the processor its ELF header names (the path a cross-check), everything else stays in the host wheel,
the host gains the extras, every output is gated and carries a RECORD, the bytes repeat, and nothing
is written when anything fails. The real wheel (amd-aiter from PyPI, installed with pip) is
tests/integration/test_split_aiter.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from buildkit.errors import GateFailed, SplitRefused, UsageError
from buildkit.gate.config import GateConfig
from buildkit.gate.rules.integrity import check_record
from buildkit.inspect import inspect_wheel
from buildkit.judge import judge_wheels
from buildkit.records import to_data
from buildkit.service.check import GateFlags, gate_config
from buildkit.split import run as split_run
from buildkit.split import split_wheel
from buildkit.split.classify import path_processors
from buildkit.split.metadata import Headers, host_metadata
from tests.helpers.offload_bundle import amdgpu_header, plain_bundle
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]
GFX942 = amdgpu_header(0x54C, 3) + b"\x42" * 200  # gfx942, xnack any, sramecc any (code object v5)
GFX950 = amdgpu_header(0x54F, 4) + b"\x50" * 300  # gfx950 (v6)
GFX90A = amdgpu_header(0x23F, 2) + b"\x0a" * 100  # gfx90a:xnack- (v4)
FAT = "demo-1.0-py3-none-any.whl"
MEMBERS: dict[str, bytes] = {
    "demo/__init__.py": b"import os\n",
    "demo/hsa/gfx942/gemm.co": GFX942,
    "demo/hsa/gfx942/sub/attn.co": GFX942 + b"\x01",
    "demo/hsa/gfx942/gemm.csv": b"m,n,k\n1,2,3\n",  # in a target's folder, but not a code object
    "demo/hsa/gfx950/gemm.co": GFX950,
    "demo/triton/aot/k.hsaco": GFX950 + b"\x02",  # no processor in its path: its header decides
    "demo/hsa/gfx90a/old.co": GFX90A,
    "demo/README.co": b"not an ELF, whatever its name\n",
}


def _fat(tmp_path: Path, members: dict[str, bytes] | None = None, name: str = FAT) -> Path:
    (tmp_path / "in").mkdir(exist_ok=True)
    return write_wheel(tmp_path / "in" / name, members or MEMBERS, requires=("numpy",), fixed_time=True)


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def _read(wheel: Path, member: str) -> bytes:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(member)


def test_each_code_object_goes_to_its_processors_wheel(tmp_path: Path) -> None:
    result = split_wheel(_fat(tmp_path), tmp_path / "out")
    assert result.passed and result.refused is None
    assert [(o.role, o.target) for o in result.outputs] == [
        ("host", None),
        ("device", "gfx90a"),
        ("device", "gfx942"),
        ("device", "gfx950"),
    ]
    host, gfx90a, gfx942, gfx950 = (o.path for o in result.outputs)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(o.path.name for o in result.outputs)
    assert host.name == FAT
    assert gfx942.name == "demo_device_gfx942-1.0-py3-none-any.whl"
    package = [n for n in _names(host) if not n.startswith("demo-1.0.dist-info/")]
    assert package == ["demo/README.co", "demo/__init__.py", "demo/hsa/gfx942/gemm.csv"]  # sorted
    assert [n for n in _names(gfx942) if ".dist-info/" not in n] == [
        "demo/hsa/gfx942/gemm.co",
        "demo/hsa/gfx942/sub/attn.co",
    ]
    assert [n for n in _names(gfx950) if ".dist-info/" not in n] == [
        "demo/hsa/gfx950/gemm.co",
        "demo/triton/aot/k.hsaco",
    ]
    assert [n for n in _names(gfx90a) if ".dist-info/" not in n] == ["demo/hsa/gfx90a/old.co"]
    assert _read(gfx950, "demo/triton/aot/k.hsaco") == MEMBERS["demo/triton/aot/k.hsaco"]
    assert result.by_header == 1
    assert [o.code_objects for o in result.devices] == [1, 2, 2]
    assert result.devices[1].code_object_bytes == 2 * len(GFX942) + 1
    # every output installs into the same paths: together they are the fat wheel's files, once each
    together: list[str] = []
    for o in result.outputs:
        together += [n for n in _names(o.path) if ".dist-info/" not in n]
    assert sorted(together) == sorted(MEMBERS)


def test_the_host_gains_one_extra_per_target_and_a_device_wheel_says_what_it_is(tmp_path: Path) -> None:
    result = split_wheel(_fat(tmp_path), tmp_path / "out")
    host_meta = _read(result.host.path, "demo-1.0.dist-info/METADATA").decode()
    assert host_meta == (
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: numpy\n"
        "Provides-Extra: gfx90a\n"
        'Requires-Dist: demo-device-gfx90a==1.0; extra == "gfx90a"\n'
        "Provides-Extra: gfx942\n"
        'Requires-Dist: demo-device-gfx942==1.0; extra == "gfx942"\n'
        "Provides-Extra: gfx950\n"
        'Requires-Dist: demo-device-gfx950==1.0; extra == "gfx950"\n'
    )
    device = result.devices[1].path
    meta = _read(device, "demo_device_gfx942-1.0.dist-info/METADATA").decode()
    assert meta.startswith("Metadata-Version: 2.1\nName: demo-device-gfx942\nVersion: 1.0\n")
    assert "Summary: the gfx942 GPU code objects of demo 1.0" in meta and "install demo[gfx942]" in meta
    assert meta.endswith("Requires-Dist: demo==1.0\n")  # the host without extras: no cycle
    wheel = _read(device, "demo_device_gfx942-1.0.dist-info/WHEEL").decode()
    assert "Root-Is-Purelib: true\nTag: py3-none-any\n" in wheel


def test_every_output_has_a_record_of_its_files_and_passes_the_gate(tmp_path: Path) -> None:
    result = split_wheel(_fat(tmp_path), tmp_path / "out")
    for o in result.outputs:
        report = inspect_wheel(o.path)
        assert report.record_verified
        assert check_record(report) == []
        record = _read(o.path, f"{report.dist_info_dir}/RECORD").decode()
        assert all(",sha256=" in line for line in record.splitlines() if not line.endswith("/RECORD,,"))
        assert _names(o.path)[-1].endswith(".dist-info/RECORD")  # RECORD last
        assert o.verdict.passed and o.verdict.config.device_target == o.target
    # `check --device-target` judges a device wheel as split did
    verdicts, _ = judge_wheels([result.devices[2].path], gate_config(GateFlags(device_target="GFX950")))
    assert verdicts[0].passed and verdicts[0].config.device_target == "gfx950"


def test_splitting_again_gives_the_same_bytes(tmp_path: Path) -> None:
    fat = _fat(tmp_path)
    first = split_wheel(fat, tmp_path / "a")
    second = split_wheel(fat, tmp_path / "b")
    assert [o.path.read_bytes() for o in first.outputs] == [o.path.read_bytes() for o in second.outputs]
    with zipfile.ZipFile(first.host.path) as zf:
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        # the input's permission bits, as a regular file's (write_wheel's fixed_time gives 0o755)
        assert {i.external_attr >> 16 for i in zf.infolist() if "dist-info" not in i.filename} == {0o100755}


def test_a_path_naming_another_target_than_the_header_is_refused(tmp_path: Path) -> None:
    members = {**MEMBERS, "demo/hsa/gfx942/wrong.co": GFX950, "demo/hsa/gfx90a/bad.co": GFX942}
    fat = _fat(tmp_path, members)
    with pytest.raises(SplitRefused) as caught:
        split_wheel(fat, tmp_path / "out")
    message = str(caught.value)
    assert "2 code object(s) cannot be split" in message
    assert "demo/hsa/gfx942/wrong.co: its path names gfx942 but its ELF header says gfx950" in message
    assert "demo/hsa/gfx90a/bad.co: its path names gfx90a but its ELF header says gfx942" in message
    assert not (tmp_path / "out").exists()
    cli = _cli("split", str(fat), "--out", str(tmp_path / "out"))
    assert cli.returncode == 16 and "wrong.co" in cli.stderr and "Traceback" not in cli.stderr


def test_path_processors_are_folder_names_only() -> None:
    assert path_processors("a/hsa/gfx942/x.co") == ("gfx942",)
    assert path_processors("a/GFX90A/b/gfx90a/x.co") == ("gfx90a",)
    assert path_processors("a/gfx942.co") == ()  # a file name is not a folder
    assert path_processors("a/gfx9999/x.co") == ()  # no such processor


def test_a_wheel_without_standalone_code_objects_is_not_split(tmp_path: Path) -> None:
    fat = _fat(tmp_path, {"demo/__init__.py": b""})
    with pytest.raises(SplitRefused, match="has no standalone code object"):
        split_wheel(fat, tmp_path / "out")


@pytest.mark.skipif(not have_gcc(), reason="gcc builds the host library with a .hip_fatbin")
def test_device_code_inside_a_host_elf_stays_and_the_report_says_why(tmp_path: Path) -> None:
    blob = plain_bundle(
        [
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", GFX942),
            ("hipv4-amdgcn-amd-amdhsa--gfx950", GFX950),
        ]
    )
    lib = build_shared_library(tmp_path / "libk.so", "int k(void){return 1;}\n", fatbin=blob)
    only_bundles = _fat(tmp_path, {"demo/libk.so": lib.read_bytes()}, "demo-1.0-py3-none-linux_x86_64.whl")
    with pytest.raises(SplitRefused) as caught:
        split_wheel(only_bundles, tmp_path / "out")
    assert "inside host ELFs (demo/libk.so)" in str(caught.value) and "kpack" in str(caught.value)
    both = _fat(
        tmp_path,
        {"demo/libk.so": lib.read_bytes(), "demo/hsa/gfx942/a.co": GFX942},
        "demo-1.1-py3-none-linux_x86_64.whl",
    )
    result = split_wheel(both, tmp_path / "out")
    assert result.passed
    assert [(b.member, b.targets) for b in result.bundles] == [("demo/libk.so", ("gfx942", "gfx950"))]
    assert "demo/libk.so" in _names(result.host.path)
    assert result.devices[0].path.name == "demo_device_gfx942-1.1-py3-none-linux_x86_64.whl"
    cli = _cli("split", str(both), "--out", str(tmp_path / "cli"))
    assert cli.returncode == 0, cli.stderr
    assert "kept in the host wheel: demo/libk.so carries gfx942, gfx950 code" in cli.stdout
    assert "TheRock's kpack" in cli.stdout


def test_an_extra_the_host_declares_already_is_refused() -> None:
    text = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nProvides-Extra: GFX942\n"
    with pytest.raises(SplitRefused, match="already declares the extra gfx942"):
        host_metadata(text, "demo", "1.0", ["gfx942"])


def test_metadata_keeps_the_description_and_raises_an_old_version() -> None:
    text = (
        "Metadata-Version: 1.2\nName: demo\nVersion: 1.0\nLicense: MIT\n  second line\n\nThe description.\n"
    )
    out = host_metadata(text, "demo", "1.0", ["gfx942"])
    assert out.startswith("Metadata-Version: 2.1\nName: demo\n")
    assert out.endswith('extra == "gfx942"\n\nThe description.\n')
    assert Headers.parse(out).values("License") == ["MIT second line"]


def test_a_data_folder_is_renamed_for_the_device_wheel(tmp_path: Path) -> None:
    members = {
        "demo/__init__.py": b"",
        "demo-1.0.data/platlib/demo/gfx942/k.co": GFX942,
    }
    fat = _fat(tmp_path, members, "demo-1.0-py3-none-linux_x86_64.whl")
    result = split_wheel(fat, tmp_path / "out")
    names = _names(result.devices[0].path)
    assert "demo_device_gfx942-1.0.data/platlib/demo/gfx942/k.co" in names
    wheel = _read(result.devices[0].path, "demo_device_gfx942-1.0.dist-info/WHEEL").decode()
    assert "Root-Is-Purelib: false\nTag: py3-none-linux_x86_64\n" in wheel


def test_the_output_folder_may_not_be_the_inputs(tmp_path: Path) -> None:
    fat = _fat(tmp_path)
    with pytest.raises(UsageError, match="would replace it"):
        split_wheel(fat, fat.parent)


def test_an_input_the_gate_refuses_is_not_split(tmp_path: Path) -> None:
    fat = _fat(tmp_path)
    with pytest.raises(GateFailed, match="fails the gate, so it is not split"):
        split_wheel(fat, tmp_path / "out", config=GateConfig(size_limit=100))
    assert not (tmp_path / "out").exists()


def test_an_output_the_gate_refuses_keeps_every_output_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outputs of a sound wheel pass; a gate that refuses one is made here by giving the gfx950
    wheel a size limit below its size (the rule that refuses does not matter: what happens then does)."""
    real = split_run.output_config

    def strict(base: GateConfig, **kw: Any) -> GateConfig:
        config = real(base, **kw)
        return config._replace(size_limit=10) if kw["target"] == "gfx950" else config

    monkeypatch.setattr(split_run, "output_config", strict)
    out = tmp_path / "out"
    result = split_wheel(_fat(tmp_path), out)
    assert not result.passed
    assert result.refused == out / ".refused" / "split-demo-1.0-py3-none-any"
    assert sorted(p.name for p in out.iterdir()) == [".refused"]  # nothing written as passing
    kept = sorted(p.name for p in result.refused.iterdir())
    assert len(kept) == 4 * 3  # every output, its text and its JSON report
    failed = [o for o in result.outputs if not o.verdict.passed]
    assert [o.target for o in failed] == ["gfx950"] and failed[0].path.parent == result.refused
    report = json.loads((result.refused / (failed[0].path.name + ".check.json")).read_text())
    assert report["passed"] is False and report["wheels"][0]["wheel"] == failed[0].path.name


def test_an_error_while_writing_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    real = split_run.write_wheel

    def failing(dest: Path, *args: Any) -> Any:
        calls.append(dest)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(dest, *args)

    monkeypatch.setattr(split_run, "write_wheel", failing)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="No space"):
        split_wheel(_fat(tmp_path), out)
    assert list(out.iterdir()) == []  # no wheel, no staging folder


def test_the_cli_json_follows_its_schema(tmp_path: Path) -> None:
    cli = _cli("split", str(_fat(tmp_path)), "--out", str(tmp_path / "out"), "--json")
    assert cli.returncode == 0, cli.stderr
    document = json.loads(cli.stdout)
    schema = json.loads((ROOT / "buildkit" / "schema" / "split.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    assert document["passed"] is True and [o["target"] for o in document["outputs"]] == [
        None,
        "gfx90a",
        "gfx942",
        "gfx950",
    ]
    text = _cli("split", str(_fat(tmp_path)), "--out", str(tmp_path / "text"))
    assert "install: pip install 'demo[gfx90a]' (one GPU), 'demo[gfx90a,gfx942,gfx950]' (all)" in text.stdout


def test_the_device_wheel_rule(tmp_path: Path) -> None:
    wrong = write_wheel(
        tmp_path / "demo_device_gfx942-1.0-py3-none-any.whl",
        {"demo/a.co": GFX942, "demo/b.co": GFX950, "demo/c.py": b""},
    )
    empty = write_wheel(tmp_path / "demo_device_gfx950-1.0-py3-none-any.whl", {})
    verdicts, _ = judge_wheels([wrong, empty], gate_config(GateFlags(device_target="gfx942")))
    messages = [f.message for v in verdicts for f in v.findings if f.rule == "device-wheel"]
    assert messages == [
        "demo/b.co is code for gfx950 (its ELF header), not gfx942: it belongs in the device wheel of gfx950",
        "demo/c.py is not a code object: a device wheel of gfx942 carries only its code objects (the host "
        "wheel keeps everything else)",
        "the device wheel of gfx942 has no code object",
    ]
    cli = _cli("check", "--device-target", "gfx942:xnack-", str(wrong))
    assert cli.returncode == 2 and "give the processor alone, e.g. gfx942" in cli.stderr
    cli = _cli("check", "--device-target", "gfx905", str(wrong))
    assert cli.returncode == 4


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


def test_the_recipe_key_and_its_mistakes(tmp_path: Path) -> None:
    from buildkit.errors import RecipeError
    from buildkit.recipe import load_recipe

    (tmp_path / "src").mkdir()
    base = (
        'name: demo\nsource: {path: src}\nversion: {base: "1.0"}\npython: ["3.13"]\nrocm: ["5.7"]\n'
        "archs: {list: [gfx90a], toolchain: debian-trixie}\nmanylinux: {policy: manylinux_2_41}\n"
        "image: debian-rocm\n"
    )
    (tmp_path / "r.yaml").write_text(base + "wheel: {abi: py3-none, split: per-target}\n")
    assert load_recipe(tmp_path / "r.yaml").wheel.split == "per-target"
    (tmp_path / "none.yaml").write_text(base)
    plain = load_recipe(tmp_path / "none.yaml").wheel
    assert plain.split == "none" and "split" not in to_data(plain)  # plans of other recipes unchanged
    (tmp_path / "bad.yaml").write_text(base + "wheel: {abi: py3-none, split: per-gpu}\n")
    with pytest.raises(RecipeError) as caught:
        load_recipe(tmp_path / "bad.yaml")
    assert caught.value.line == 9 and "per-gpu" in str(caught.value)
