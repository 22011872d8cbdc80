"""job-identity for Python-independent wheels (issue 30): a ``py3-none`` or ``cp312-abi3`` job accepts
exactly that tag and checks what it claims, on real wheels of gcc-built shared objects."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from buildkit.gate.config import GateConfig, JobIdentity
from buildkit.judge import judge_wheels
from buildkit.records import to_data
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="needs gcc")

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = sysconfig.get_paths()["include"]

#: a library loaded with ctypes: no CPython symbol at all
CTYPES_LIB = "int demo_add(int a, int b) { return a + b; }\n"
#: a CPython extension module hidden under a library's name (no Python.h needed to export the symbol)
SNEAKY_MODULE = "void *PyInit__sneaky(void) { return 0; }\nint demo_add(int a, int b) { return a + b; }\n"
#: an extension module written for the limited API of 3.11
LIMITED = """
#define Py_LIMITED_API 0x030B0000
#include <Python.h>
static PyObject *hello(PyObject *self, PyObject *arg) { return PyUnicode_FromString("hi"); }
static PyMethodDef methods[] = {{"hello", hello, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, methods};
PyMODINIT_FUNC PyInit__ext(void) { return PyModule_Create(&mod); }
"""
#: the same module reaching past the limited API: PyUnicode_AsUTF8 is not in the stable ABI (3.11)
NOT_LIMITED = LIMITED.replace("#define Py_LIMITED_API 0x030B0000\n", "").replace(
    'return PyUnicode_FromString("hi");', "return PyUnicode_FromString(PyUnicode_AsUTF8(arg));"
)
#: limited API, but a function the stable ABI has only from 3.10 on
FROM_310 = LIMITED.replace("0x030B0000", "0x030A0000").replace(
    'return PyUnicode_FromString("hi");',
    "Py_ssize_t n; return PyUnicode_FromString(PyUnicode_AsUTF8AndSize(arg, &n));",
)


def _so(tmp_path: Path, name: str, source: str) -> bytes:
    out = tmp_path / name
    work = out.parent / (out.name + ".build")
    work.mkdir(parents=True, exist_ok=True)
    if "Python.h" in source:
        src = work / "ext.c"
        src.write_text(source)
        cmd = ["gcc", "-shared", "-fPIC", "-O1", f"-I{INCLUDE}", "-o", str(out), str(src)]
        subprocess.run(cmd, check=True, capture_output=True)
        return out.read_bytes()
    return build_shared_library(out, source).read_bytes()


def _identity(tag: str) -> JobIdentity:
    job = "py3-rocm5.7" if tag == "py3-none" else f"abi3-{tag.split('-')[0]}-rocm5.7"
    return JobIdentity(job=job, version="1.0", python="cp311", platform_tag="linux_x86_64", wheel_tag=tag)


def _identity_errors(wheel: Path, tag: str) -> list[tuple[str | None, str]]:
    verdicts, failures = judge_wheels([wheel], GateConfig(identity=_identity(tag)))
    assert failures == []
    return [(f.file, f.message) for f in verdicts[0].findings if f.rule == "job-identity"]


def test_a_py3_none_wheel_of_a_ctypes_library_passes(tmp_path: Path) -> None:
    wheel = write_wheel(
        tmp_path / "demo-1.0-py3-none-linux_x86_64.whl",
        {"demo/__init__.py": b"", "demo/libdemo.so": _so(tmp_path, "libdemo.so", CTYPES_LIB)},
    )
    assert _identity_errors(wheel, "py3-none") == []


def test_a_py3_none_wheel_sneaking_a_pyinit_module_is_refused_naming_the_member(tmp_path: Path) -> None:
    wheel = write_wheel(
        tmp_path / "demo-1.0-py3-none-linux_x86_64.whl",
        {"demo/__init__.py": b"", "demo/_sneaky.so": _so(tmp_path, "_sneaky.so", SNEAKY_MODULE)},
    )
    errors = _identity_errors(wheel, "py3-none")
    assert len(errors) == 1, errors
    member, message = errors[0]
    assert member == "demo/_sneaky.so"
    assert message.startswith(
        "demo/_sneaky.so exports PyInit__sneaky: a CPython extension module in a py3-none"
    )


def test_a_py3_none_wheel_with_a_versioned_module_name_is_refused_by_name(tmp_path: Path) -> None:
    name = "demo/_c.cpython-311-x86_64-linux-gnu.so"
    wheel = write_wheel(
        tmp_path / "demo-1.0-py3-none-linux_x86_64.whl",
        {name: _so(tmp_path, "_c.so", CTYPES_LIB), "demo/_s.abi3.so": _so(tmp_path, "_s.so", CTYPES_LIB)},
    )
    errors = _identity_errors(wheel, "py3-none")
    assert errors == [
        (
            name,
            f"{name}: a CPython extension module for one Python version in a py3-none wheel, which "
            "claims to serve every planned Python",
        ),
        (
            "demo/_s.abi3.so",
            "demo/_s.abi3.so: a CPython extension module (stable ABI) in a py3-none wheel, which claims "
            "to serve every planned Python",
        ),
    ]


def test_a_py3_none_job_refuses_a_per_python_tag_and_says_how_to_tag_it(tmp_path: Path) -> None:
    wheel = write_wheel(
        tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl",
        {"demo/libdemo.so": _so(tmp_path, "libdemo.so", CTYPES_LIB)},
    )
    (member, message), *rest = _identity_errors(wheel, "py3-none")
    assert rest == [] and member is None
    assert message.startswith(
        "python tag: expected py3-none (job py3-rocm5.7's wheel, the recipe's wheel:), found cp311-cp311"
    )
    assert 'wheel.py-api = "py3"' in message


def test_an_abi3_wheel_of_a_limited_api_module_passes_and_the_tag_must_be_exact(tmp_path: Path) -> None:
    members = {"demo/_ext.abi3.so": _so(tmp_path, "_ext.so", LIMITED)}
    wheel = write_wheel(tmp_path / "demo-1.0-cp311-abi3-linux_x86_64.whl", members)
    assert _identity_errors(wheel, "cp311-abi3") == []
    # another floor than the recipe's is another wheel: refused, though CPython 3.11 would load it
    wheel = write_wheel(tmp_path / "demo-1.0-cp310-abi3-linux_x86_64.whl", members)
    errors = _identity_errors(wheel, "cp311-abi3")
    assert [m.split(";")[0] for _, m in errors] == [
        "python tag: expected cp311-abi3 (job abi3-cp311-rocm5.7's wheel, the recipe's wheel:), "
        "found cp310-abi3"
    ]


def test_an_abi3_wheel_using_a_non_limited_symbol_is_refused_naming_member_and_symbol(tmp_path: Path) -> None:
    wheel = write_wheel(
        tmp_path / "demo-1.0-cp311-abi3-linux_x86_64.whl",
        {"demo/_ext.abi3.so": _so(tmp_path, "_ext.so", NOT_LIMITED)},
    )
    verdicts, _ = judge_wheels([wheel], GateConfig(identity=_identity("cp311-abi3")))
    found = [f for f in verdicts[0].findings if f.rule == "job-identity"]
    assert len(found) == 1 and not verdicts[0].passed
    assert (found[0].file, found[0].symbol) == ("demo/_ext.abi3.so", "PyUnicode_AsUTF8")
    assert found[0].message.startswith(
        "demo/_ext.abi3.so uses PyUnicode_AsUTF8, outside the stable ABI (abi3audit "
    )


def test_an_abi3_wheel_using_the_stable_abi_of_a_later_python_is_refused(tmp_path: Path) -> None:
    wheel = write_wheel(
        tmp_path / "demo-1.0-cp38-abi3-linux_x86_64.whl",
        {"demo/_ext.abi3.so": _so(tmp_path, "_ext.so", FROM_310)},
    )
    errors = _identity_errors(wheel, "cp38-abi3")
    assert len(errors) == 1, errors
    assert errors[0][0] == "demo/_ext.abi3.so"
    assert errors[0][1].startswith(
        "demo/_ext.abi3.so uses PyUnicode_AsUTF8AndSize, in the stable ABI from CPython 3.10 only: above "
        "the cp38-abi3 floor"
    )
    # the same wheel under a 3.10 floor passes
    wheel = write_wheel(
        tmp_path / "demo-1.0-cp310-abi3-linux_x86_64.whl",
        {"demo/_ext.abi3.so": _so(tmp_path, "_ext.so", FROM_310)},
    )
    assert _identity_errors(wheel, "cp310-abi3") == []


def test_check_with_recipe_and_job_refuses_the_sneaking_wheel_exit_7(tmp_path: Path) -> None:
    """``buildkit check --recipe R --job py3-rocm5.7``: the job's claim from the recipe, exit 7, the
    member named in the report."""
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f'name: demo\nsource: {{path: {ROOT / "csrc"}}}\nversion: {{base: "1.0", local: "rocm{{rocm}}"}}\n'
        'python: ["3.11", "3.13"]\nwheel: {abi: py3-none}\nrocm: ["5.7"]\n'
        "archs: {list: [gfx90a], toolchain: debian-trixie}\nmanylinux: {policy: manylinux_2_41}\n"
        "image: debian-rocm\n"
    )
    wheel = write_wheel(
        tmp_path / "demo-1.0+rocm5.7-py3-none-manylinux_2_41_x86_64.whl",
        {"demo/_sneaky.so": _so(tmp_path, "_sneaky.so", SNEAKY_MODULE)},
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    cmd = [
        sys.executable,
        "-m",
        "buildkit",
        "check",
        str(wheel),
        "--recipe",
        str(recipe),
        "--job",
        "py3-rocm5.7",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert "demo/_sneaky.so exports PyInit__sneaky" in proc.stdout
    assert "python tag" not in proc.stdout  # py3-none is the job's tag


def test_a_signed_configuration_keeps_the_wheel_tag() -> None:
    """publish --public-key runs the gate again with the configuration the manifest records
    (GateConfig.from_json): a py3-none/abi3 job's tag must survive it, or the re-gate expects cp313."""
    from buildkit.gate.config import GateConfig
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    root = Path(__file__).resolve().parents[2] / "tests" / "data" / "pyindep"
    for name, tag in (("ctypes.yaml", "py3-none"), ("abi3.yaml", "cp312-abi3")):
        recipe = load_recipe(root / name)
        (job,) = expand(recipe, env={}, enumerator=lambda: []).jobs
        config = GateConfig.from_job(job, recipe)
        back = GateConfig.from_json(to_data(config))
        assert config.identity is not None and back.identity is not None
        assert back.identity.wheel_tag == config.identity.wheel_tag == tag
