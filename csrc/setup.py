"""Build of buildkit-refkernels: the HIP extension refkernels._C (see hipbuild.py for the knobs)."""

import os
import sys

from setuptools import Extension, setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hipbuild import HipBuildExt

setup(
    # rocm-buildkit passes the planned version (with its local label) as BUILDKIT_VERSION
    version=os.environ.get("BUILDKIT_VERSION") or os.environ.get("REFKERNELS_VERSION", "0.1.0"),
    ext_modules=[
        Extension(
            "refkernels._C",
            sources=[
                "src/module.c",
                "src/gemm.hip",
                "src/rowsum.hip",
                "src/hip_runtime_info.hip",
            ],
            depends=["src/refkernels.h"],
        )
    ],
    cmdclass={"build_ext": HipBuildExt},
)
