"""Recipes the end-to-end tests and benchmarks derive from recipes/reference.yaml."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def reference_three_pythons(tmp: Path) -> Path:
    """recipes/reference.yaml for ROCm 7.2 only and the builder's three CPythons (3.13, 3.14, 3.15),
    its source the checkout's csrc/ and no publish target: ``tmp/reference-3py.yaml``."""
    data = yaml.safe_load((ROOT / "recipes" / "reference.yaml").read_text())
    data["source"] = {"path": str(ROOT / "csrc")}
    data["python"] = ["3.13", "3.14", "3.15"]
    data["rocm"] = ["7.2"]
    data.pop("publish", None)
    path = tmp / "reference-3py.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


#: a torch extension as most projects write one: ``torch.utils.cpp_extension``'s ``BuildExtension``
#: and ``CppExtension``, which put the build environment's torch include folders on every compile line
#: (``-I<env>/lib/python3.11/site-packages/torch/include``; no link, no prefix map of its own), plus a
#: HIP kernel compiled with hipcc into an object linked in (a CPU torch has no HIP extension support)
PLAIN_TORCH_SETUP = '''\
import os
import sysconfig

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

#: the builder's links to ROCm's libraries alone (docker/rocm-lib-links.sh): with a sysroot, the one
#: library folder of the image a link may search
ROCM_LIB_LINKS = "/opt/buildkit/rocm-lib"


class BuildHip(BuildExtension):
    """BuildExtension; the .hip sources compiled with hipcc first and linked in as objects."""

    def finalize_options(self):
        super().finalize_options()
        # setuptools adds the shared Python's LIBDIR (/usr/lib/x86_64-linux-gnu: the image's glibc)
        libdir = sysconfig.get_config_var("LIBDIR")
        self.library_dirs = [d for d in self.library_dirs if d != libdir]

    def build_extension(self, ext):
        archs = os.environ["PYTORCH_ROCM_ARCH"].split(";")
        for source in [s for s in ext.sources if s.endswith(".hip")]:
            ext.sources.remove(source)
            obj = os.path.join(self.build_temp, source + ".o")
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            offload = [f"--offload-arch={arch}" for arch in archs]
            self.spawn(["hipcc", "-x", "hip", "-c", source, "-o", obj, "-fPIC", "-O2", *offload])
            ext.extra_objects.append(obj)
        super().build_extension(ext)


setup(
    name="buildkit-plaintorch",
    version=os.environ["BUILDKIT_VERSION"],
    packages=["plaintorch"],
    install_requires=["torch==2.13.*"],
    ext_modules=[
        CppExtension(
            "plaintorch._C",
            ["src/scale_add.cpp", "src/bindings.cpp", "src/devices.hip"],
            extra_compile_args={"cxx": ["-std=c++20", "-O2"]},
            library_dirs=[d for d in (ROCM_LIB_LINKS,) if os.path.isdir(d)],
            libraries=["amdhip64"],
        )
    ],
    cmdclass={"build_ext": BuildHip.with_options(use_ninja=False)},
)
'''
PLAIN_TORCH_PYPROJECT = """\
[build-system]
requires = ["setuptools>=77", "torch==2.13.*"]
build-backend = "setuptools.build_meta"
"""
PLAIN_TORCH_SOURCES = {
    "plaintorch/__init__.py": (
        "import torch  # noqa: F401\n\nfrom plaintorch._C import hip_devices, scale_add\n"
    ),
    "src/scale_add.cpp": (
        "#include <torch/extension.h>\n\n"
        "torch::Tensor scale_add(const torch::Tensor& x, const torch::Tensor& y, double alpha) {\n"
        '  TORCH_CHECK(x.sizes() == y.sizes(), "scale_add: x and y differ in shape");\n'
        "  return x * alpha + y;\n"
        "}\n"
    ),
    "src/bindings.cpp": (
        "#include <torch/extension.h>\n\n"
        "torch::Tensor scale_add(const torch::Tensor& x, const torch::Tensor& y, double alpha);\n"
        'extern "C" int plaintorch_hip_devices();\n\n'
        "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
        '  m.def("scale_add", &scale_add, "x * alpha + y");\n'
        '  m.def("hip_devices", &plaintorch_hip_devices, "HIP devices seen (0 without a GPU)");\n'
        "}\n"
    ),
    "src/devices.hip": (
        "#include <hip/hip_runtime.h>\n\n"
        "__global__ void fill(float* out, float value, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) out[i] = value;\n"
        "}\n\n"
        'extern "C" int plaintorch_hip_devices() {\n'
        "  int count = 0;\n"
        "  return hipGetDeviceCount(&count) == hipSuccess ? count : 0;\n"
        "}\n"
    ),
}
#: what one build of it compiles: the HIP kernel (device code, no torch header) and the two C++
#: translation units against torch/extension.h (host code)
PLAIN_TORCH_DEVICE, PLAIN_TORCH_HOST = 1, 2


def plain_torch_extension(tmp: Path) -> Path:
    """recipes/reference-torch.yaml (ROCm 7.2, CPython 3.11, torch 2.13, glibc2.31 sysroot) for a
    plain torch extension written into ``tmp/plaintorch`` (two translation units, both including
    ``torch/extension.h`` from the isolated build environment), without smoke or publish target:
    ``tmp/plaintorch.yaml``."""
    source = tmp / "plaintorch"
    for name, text in {
        "setup.py": PLAIN_TORCH_SETUP,
        "pyproject.toml": PLAIN_TORCH_PYPROJECT,
        **PLAIN_TORCH_SOURCES,
    }.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    data = yaml.safe_load((ROOT / "recipes" / "reference-torch.yaml").read_text())
    data["name"] = "buildkit-plaintorch"
    data["source"] = {"path": str(source)}
    for key in ("publish", "smoke", "size_budget"):
        data.pop(key, None)
    path = tmp / "plaintorch.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
