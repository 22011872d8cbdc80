"""Build of buildkit-refops: the torch extension refops._C (see torchbuild.py for the knobs)."""

import os
import sys

from setuptools import Extension, setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchbuild import TorchHipBuildExt, torch_requirement

setup(
    # rocm-buildkit passes the planned version (with its local label) as BUILDKIT_VERSION
    version=os.environ.get("BUILDKIT_VERSION") or os.environ.get("REFOPS_VERSION", "0.1.0"),
    # pinned: the torch series the extension is compiled against (its C++ ABI is only that series');
    # stable: that torch and every later one (REFOPS_TORCH_ABI, torchbuild.torch_requirement)
    install_requires=[torch_requirement()],
    ext_modules=[
        Extension(
            "refops._C",
            # ops.cpp or ops_stable.cpp by REFOPS_TORCH_ABI (torchbuild.torch_sources)
            sources=["src/ops.cpp", "src/ops_stable.cpp", "src/rms_norm.hip"],
            depends=["src/refops_hip.h", "src/rms_norm_cpu.h"],
        )
    ],
    cmdclass={"build_ext": TorchHipBuildExt},
)
