# debian-rocm: the offline/local HIP builder of rocm-buildkit (built and used in CI).
#
# Debian trixie packages ROCm 5.7.1's HIP with LLVM/clang 17 (`hipcc`, `libamdhip64-dev`,
# `rocm-device-libs-17`); it compiles device code for gfx908, gfx90a and gfx942. The image follows
# the layout cibuildwheel expects from a manylinux image: /opt/python/cp313-cp313 (a venv with pip,
# build, setuptools, wheel), /opt/python/cp39-cp39/bin/python (cibuildwheel's utility interpreter:
# cp39-cp39 is a symlink to the cp313-cp313 directory, so that interpreter finds the venv's
# pyvenv.cfg and its packages; a symlink of the bare python binary would start the system Python),
# auditwheel and patchelf on PATH, AUDITWHEEL_PLAT a real policy (trixie has glibc 2.41).
#
# The compiler cache (buildkit/build/ccache.py): /usr/lib/ccache holds a link to ccache for every
# compiler name (update-ccache-symlinks runs once every compiler is installed: the package's own
# trigger misses cc, c++ and clang), put first on PATH by a build with the cache; Debian's hipcc runs
# its clang through HIP_CLANG_LAUNCHER=ccache. Nothing here turns the cache on: `--no-cache` builds
# see the compilers as installed.
#
# Build it with `buildkit image build debian-rocm`: that command downloads the pinned wheels named
# in debian-rocm.*.txt into the build context (wheels/), so no pip index or CA bundle is needed
# during the build; apt-get needs only the Debian mirror.
# Without a registry, make the base first: `buildkit image seed debian:trixie-slim`.
ARG BASE_IMAGE=debian:trixie-slim
FROM ${BASE_IMAGE}

# The HIP toolchain is pinned (it decides the device code); the other Debian packages follow the
# suite of the base image (its image id is part of the content tag): DL3008 is ignored on purpose
# for them, since pinning every Debian package breaks the build at each point release.
ARG HIP_DEB_VERSION=5.7.1-6+deb13u1
ARG AUDITWHEEL_PLAT=manylinux_2_41_x86_64

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "hipcc=${HIP_DEB_VERSION}" \
      "libamdhip64-dev=${HIP_DEB_VERSION}" \
      rocm-device-libs-17 \
      g++ \
      make \
      python3-dev \
      python3-venv \
      patchelf \
      ccache \
      file \
      unzip \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s lib/llvm-17/lib/clang/17/amdgcn /usr/amdgcn \
 && test -f /usr/amdgcn/bitcode/ocml.bc \
 && update-ccache-symlinks \
 && for cc in cc c++ gcc g++ x86_64-linux-gnu-gcc x86_64-linux-gnu-g++ clang-17 clang++-17; do \
      test "$(readlink -f "/usr/lib/ccache/$cc")" = /usr/bin/ccache || exit 1; \
    done

COPY debian-rocm.python.txt debian-rocm.tools.txt /tmp/requirements/
COPY wheels/ /tmp/wheels/

RUN python3 -m venv /opt/python/cp313-cp313 \
 && python3 -m venv /opt/buildkit-tools \
 && /opt/python/cp313-cp313/bin/pip install --no-cache-dir --no-index --find-links=/tmp/wheels \
      --require-hashes -r /tmp/requirements/debian-rocm.python.txt \
 && /opt/buildkit-tools/bin/pip install --no-cache-dir --no-index --find-links=/tmp/wheels \
      --require-hashes -r /tmp/requirements/debian-rocm.tools.txt \
 && ln -s cp313-cp313 /opt/python/cp39-cp39 \
 && ln -s /opt/buildkit-tools/bin/auditwheel /usr/local/bin/auditwheel \
 && rm -rf /tmp/wheels /tmp/requirements

# ROCM_PATH=/usr: Debian installs HIP under /usr; clang looks for the device libraries in
# $ROCM_PATH/amdgcn/bitcode, hence the /usr/amdgcn link made above (without it, any ROCM_PATH=/usr
# in a build environment makes hipcc fail with "cannot find ROCm device library").
ENV HIP_PLATFORM=amd \
    ROCM_PATH=/usr \
    AUDITWHEEL_PLAT=${AUDITWHEEL_PLAT}

LABEL org.opencontainers.image.title="rocm-buildkit debian-rocm builder" \
      io.rocm-buildkit.hip-deb-version="${HIP_DEB_VERSION}"
