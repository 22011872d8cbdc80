# debian-sid-rocm: the current-ROCm builders of rocm-buildkit, from Debian's own ROCm packaging.
#
# One Dockerfile, one image per ROCm release (profiles.toml: [profiles.debian-sid-rocm.releases]):
#   ROCm 7.2  ROCM_SUITE=experimental: hipcc 7.2.4 on clang-22, libamdhip64-7, rocBLAS 5, hipBLAS 3
#   ROCm 6.4  ROCM_SUITE=unstable:     hipcc 7.0.2 on clang-21, libamdhip64-6, rocBLAS 4, hipBLAS 2
# both over Debian sid (glibc 2.43, GCC 16), with sid's CPython 3.13, 3.14 and 3.15 and bookworm's 3.11
# (for the torch wheels reachable here) as cibuildwheel expects them (/opt/python/cpXY-cpXY: venvs with pip, build, setuptools, wheel; cp39-cp39 -> the
# first one, cibuildwheel's utility interpreter), auditwheel (own venv) and patchelf.
#
# Only the ROCm packages come from ROCM_SUITE: an apt preference pins those names to it, so glibc,
# GCC and Python stay sid's (`apt-get -t experimental` would also take experimental's glibc).
# Debian's ROCm is upstream LLVM's: headers in /usr/include/hip, libraries in
# /usr/lib/x86_64-linux-gnu, device libraries in /usr/lib/llvm-N/lib/clang/N/amdgcn (linked as
# /usr/amdgcn, where clang looks with ROCM_PATH=/usr), no /opt/rocm.
#
# Debian's ROCm needs glibc >= 2.38, and anything compiled here links sid's glibc (2.43) and
# libstdc++ (GLIBCXX_3.4.34): no manylinux policy fits. The compatibility sysroot glibc2.31
# (sysroot.sh, packages pinned in sysroot-glibc2.31.txt) holds bullseye's glibc 2.31 and GCC 10's
# libstdc++; a job with `manylinux.sysroot: glibc2.31` compiles every host object against it
# (buildkit/build/cibw.py sets the variables), so its wheel needs at most GLIBC_2.31 and
# GLIBCXX_3.4.28 while its device code still comes from this clang. The sysroot glibc2.28 is the same
# with glibc 2.28's ABI (zig's link stubs, glibc-stubs.sh): at most GLIBC_2.28, for manylinux_2_28.
#
# The compiler cache: /usr/lib/ccache holds a link to ccache for every compiler name; hipcc runs its
# clang through HIP_CLANG_LAUNCHER=ccache. Nothing here turns the cache on.
ARG BASE_IMAGE=debian:sid-slim

# The wheelhouse downloaded on the host (profiles.toml wheel_requirements); ziglang and cmeel-libomp are
# set apart: only the glibc-stubs stage uses zig (the image never holds its 100 MB), and libomp goes into
# the sysroots
FROM ${BASE_IMAGE} AS wheelhouse
COPY wheels/ /wheels/
RUN mkdir /zig /openmp && mv /wheels/ziglang-*.whl /zig/ && mv /wheels/cmeel_libomp-*.whl /openmp/

# glibc 2.28's ABI (no Debian suite reachable here has glibc 2.28): zig's link stubs of its libraries
# (glibc-stubs.sh make), for the compatibility sysroot glibc2.28 below
FROM ${BASE_IMAGE} AS glibc-stubs
# hadolint ignore=DL3008
RUN apt-get -o Acquire::Check-Valid-Until=false update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends unzip binutils \
 && rm -rf /var/lib/apt/lists/*
COPY glibc-stubs.sh /usr/local/bin/
COPY --from=wheelhouse /zig/ /zig/
RUN glibc-stubs.sh make 2.28 /zig/ziglang-*.whl /stubs

FROM ${BASE_IMAGE}

ARG ROCM_SUITE=experimental
ARG HIP_DEB_VERSION=7.2.4+dfsg-1~exp1
ARG LLVM_MAJOR=22
ARG PYTHONS="3.13 3.14 3.15"
ARG ROCM_PACKAGES="libhipblas-dev librocblas-dev"
ARG AUDITWHEEL_PLAT=manylinux_2_31_x86_64

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# hadolint ignore=DL3008,SC2086
RUN if [ "$ROCM_SUITE" != unstable ] && [ "$ROCM_SUITE" != sid ]; then \
      echo "deb http://deb.debian.org/debian $ROCM_SUITE main" >/etc/apt/sources.list.d/rocm-suite.list; \
      printf 'Package: hipcc libamdhip64* libamd-comgr* libhsa-runtime* libhiprtc* rocm-* librocblas* libhipblas* libhipblaslt* librocsolver* libroctx64* libroctracer* librocsparse* libhipsparse* librocrand* libhiprand* librocprim* libhipcub* librocfft* libhipfft* libhipsolver* librccl* libmiopen* libhipsparselt* libcomposable-kernel* librocwmma* librocthrust*\nPin: release a=%s\nPin-Priority: 990\n' "$ROCM_SUITE" >/etc/apt/preferences.d/rocm-suite; \
    fi \
 && apt-get -o Acquire::Check-Valid-Until=false update -qq \
 && pys=""; for v in $PYTHONS; do pys="$pys python$v-dev python$v-venv"; done \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "hipcc=${HIP_DEB_VERSION}" \
      libamdhip64-dev \
      "rocm-device-libs-${LLVM_MAJOR}" \
      ${ROCM_PACKAGES} \
      $pys \
      g++ make cmake ninja-build patchelf ccache file unzip ca-certificates \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "lib/llvm-${LLVM_MAJOR}/lib/clang/${LLVM_MAJOR}/amdgcn" /usr/amdgcn \
 && test -f /usr/amdgcn/bitcode/ocml.bc \
 && update-ccache-symlinks \
 && for cc in cc c++ gcc g++ x86_64-linux-gnu-gcc x86_64-linux-gnu-g++ "clang-${LLVM_MAJOR}" "clang++-${LLVM_MAJOR}"; do \
      test "$(readlink -f "/usr/lib/ccache/$cc")" = /usr/bin/ccache || exit 1; \
    done

COPY rocm-lib-links.sh sysroot.sh sysroot-glibc2.31.txt /opt/buildkit/share/
RUN /opt/buildkit/share/sysroot.sh glibc2.31 /opt/buildkit/share/sysroot-glibc2.31.txt bullseye "${LLVM_MAJOR}" \
 && rm -rf /var/lib/apt/lists/*

# The compatibility sysroot glibc2.28: the same bullseye packages, glibc's libraries replaced by zig's
# glibc 2.28 stubs and the functions glibc 2.28 lacks made link errors (glibc-stubs.sh install)
COPY glibc-stubs.sh /opt/buildkit/share/
COPY --from=glibc-stubs /stubs/ /opt/buildkit/share/glibc2.28-stubs/
RUN /opt/buildkit/share/sysroot.sh glibc2.28 /opt/buildkit/share/sysroot-glibc2.31.txt bullseye "${LLVM_MAJOR}" \
 && /opt/buildkit/share/glibc-stubs.sh install glibc2.28 2.28 /opt/buildkit/share/glibc2.28-stubs \
 && rm -rf /var/lib/apt/lists/*

# OpenMP in every sysroot: LLVM's libomp for clang's -fopenmp (sysroot-openmp.txt), needing GLIBC_2.14
COPY --from=wheelhouse /openmp/ /tmp/openmp/
RUN for root in /opt/buildkit/sysroots/*; do \
      unzip -q -o -j /tmp/openmp/cmeel_libomp-*.whl 'cmeel.prefix/lib/libomp.so' -d "$root/usr/lib/x86_64-linux-gnu" \
      && unzip -q -o -j /tmp/openmp/cmeel_libomp-*.whl 'cmeel.prefix/include/*.h' -d "$root/usr/include" || exit 1; \
    done \
 && rm -rf /tmp/openmp

ARG BOOKWORM_PYTHONS="3.11"
# CPython 3.11 from bookworm (sid has none): the Python of the torch wheels reachable here (torch
# 2.13.0+cpu, 2.14.1 for cp311), for torch extensions. Only python3.11-dev and what it depends on
# come from bookworm (priority 100: nothing else is taken from it); its venv gets pip from the
# pinned wheelhouse below instead of bookworm's ensurepip.
# hadolint ignore=DL3008,SC2086
RUN if [ -n "$BOOKWORM_PYTHONS" ]; then \
      echo "deb http://deb.debian.org/debian bookworm main" >/etc/apt/sources.list.d/bookworm.list \
      && printf 'Package: *\nPin: release n=bookworm\nPin-Priority: 100\n' >/etc/apt/preferences.d/bookworm \
      && apt-get -o Acquire::Check-Valid-Until=false update -qq \
      && pys="" && for v in $BOOKWORM_PYTHONS; do pys="$pys python$v-dev"; done \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pys \
      && apt-get clean \
      && rm -rf /var/lib/apt/lists/* /etc/apt/sources.list.d/bookworm.list /etc/apt/preferences.d/bookworm; \
    fi

COPY debian-rocm.python.txt debian-rocm.tools.txt /tmp/requirements/
COPY --from=wheelhouse /wheels/ /tmp/wheels/

RUN first="" \
 && for v in $PYTHONS; do \
      tag="cp$(echo "$v" | tr -d .)-cp$(echo "$v" | tr -d .)"; first=${first:-$tag}; \
      "python$v" -m venv "/opt/python/$tag" \
      && "/opt/python/$tag/bin/pip" install --no-cache-dir --no-index --find-links=/tmp/wheels \
           --require-hashes -r /tmp/requirements/debian-rocm.python.txt || exit 1; \
    done \
 && for v in $BOOKWORM_PYTHONS; do \
      tag="cp$(echo "$v" | tr -d .)-cp$(echo "$v" | tr -d .)"; \
      "python$v" -m venv --without-pip "/opt/python/$tag" \
      && pipwhl=$(echo /tmp/wheels/pip-*.whl) \
      && "/opt/python/$tag/bin/python" "$pipwhl/pip" install --no-cache-dir --no-index \
           --find-links=/tmp/wheels --require-hashes -r /tmp/requirements/debian-rocm.python.txt || exit 1; \
    done \
 && "python${PYTHONS%% *}" -m venv /opt/buildkit-tools \
 && /opt/buildkit-tools/bin/pip install --no-cache-dir --no-index --find-links=/tmp/wheels \
      --require-hashes -r /tmp/requirements/debian-rocm.tools.txt \
 && ln -s "$first" /opt/python/cp39-cp39 \
 && ln -s /opt/buildkit-tools/bin/auditwheel /usr/local/bin/auditwheel \
 && rm -rf /tmp/wheels /tmp/requirements

# experimental's and sid's Release files can be past their Valid-Until on this mirror: a recipe's
# image.packages layer (apt-get update) must still read them
RUN echo 'Acquire::Check-Valid-Until "false";' >/etc/apt/apt.conf.d/99buildkit-valid-until

ENV HIP_PLATFORM=amd \
    ROCM_PATH=/usr \
    AUDITWHEEL_PLAT=${AUDITWHEEL_PLAT}

LABEL org.opencontainers.image.title="rocm-buildkit debian-sid-rocm builder" \
      io.rocm-buildkit.hip-deb-version="${HIP_DEB_VERSION}" \
      io.rocm-buildkit.rocm-suite="${ROCM_SUITE}"
