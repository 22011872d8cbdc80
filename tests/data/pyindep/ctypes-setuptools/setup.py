"""libctypesdemo.so built with hipcc (host C and HIP device code for GPU_ARCHS, which rocm-buildkit
exports) into the package at build_py time; the distribution says it has binaries, so the wheel is a
platform wheel (setuptools tags it cp3X-cp3X)."""

import os
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py


class BuildLibrary(build_py):
    def run(self) -> None:
        super().run()
        out = os.path.join(self.build_lib, "ctypesdemo")
        os.makedirs(out, exist_ok=True)
        archs = [f"--offload-arch={a}" for a in os.environ["GPU_ARCHS"].split(";") if a]
        subprocess.run(
            ["hipcc", "-fPIC", "-O2", *archs, "-c", "src/kernel.hip", "-o", "kernel.o"], check=True
        )
        subprocess.run(["cc", "-fPIC", "-O2", "-c", "src/ctypesdemo.c", "-o", "ctypesdemo.o"], check=True)
        library = os.path.join(out, "libctypesdemo.so")
        subprocess.run(
            ["hipcc", "-shared", "-fPIC", "ctypesdemo.o", "kernel.o", "-o", library, "-lamdhip64"], check=True
        )


class BinaryDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildLibrary}, distclass=BinaryDistribution)
