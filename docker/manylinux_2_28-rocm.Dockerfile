# manylinux_2_28-rocm: the production HIP builder of rocm-buildkit.
#
# The pypa manylinux_2_28 image (AlmaLinux 8, glibc 2.28) pinned by digest, plus AMD's ROCm RPMs for
# EL8 from repo.radeon.com. Kept from manylinux: /opt/python/cp310..cp314, patchelf, AUDITWHEEL_PLAT.
# Pinned here: gcc-toolset-$GCC_TOOLSET (the only toolset left in the image, and the one ROCm's clang is
# told to use), cmake, ninja and auditwheel (docker/manylinux_2_28-rocm.tools.txt). ROCm lands in
# /opt/rocm-$ROCM_VERSION (/opt/rocm links to it). docs/PRODUCTION_BUILDER.md reviews this file against
# PyTorch's and TheRock's builders.
#
# Every ROCm build argument comes from buildkit/rocm/install.yaml: `buildkit image build
# manylinux_2_28-rocm --rocm 7.2` (and `buildkit build`, per job) passes the release's ROCM_VERSION,
# ROCM_REPO, GRAPHICS_REPO, ROCM_GPG_KEY and ROCM_PACKAGES; the defaults below are that data's newest
# release (tests/unit/test_rocm_install.py keeps them equal). AMD's repository directories have no
# trailing .0 (7.1.0 is rocm/el8/7.1/main) and moved with ROCm 7:
#   ROCm 6.x: rocm/rhel8/<dir>/main  + amdgpu/<dir>/rhel/8.10/main/x86_64/
#   ROCm 7.x: rocm/el8/<dir>/main    + graphics/<dir>/el/8/main/x86_64/
#
# The compiler cache (buildkit/build/ccache.py), used only by builds with the cache: /usr/lib64/ccache
# links gcc, g++, cc and c++ to ccache (first on PATH there, so ccache runs the gcc-toolset's compilers
# by name); AMD's compiled hipcc ignores HIP_CLANG_LAUNCHER but runs $HIP_CLANG_PATH/clang++, so
# /opt/rocm-buildkit/hip-ccache mirrors /opt/rocm/llvm/bin with clang and clang++ replaced by
# `exec "${BUILDKIT_HIP_LAUNCHER:-ccache}" /opt/rocm/llvm/bin/clang++ "$@"`: every build, with the
# cache or not, sets HIP_CLANG_PATH to it and BUILDKIT_HIP_LAUNCHER to its staged HIP launcher
# (buildkit/build/hip_launcher.sh: a deterministic -cuid, then ccache when the cache is on). Caching
# HIP compiles and reading the hit rate (`ccache --print-stats`) need ccache 4: EPEL 8 gives 4.x.

# base-image: quay.io/pypa/manylinux_2_28_x86_64 resolved-from=ROCm/TheRock dockerfiles/build_manylinux_x86_64.Dockerfile
# (rewritten by `buildkit image bump-base manylinux_2_28-rocm --tag <date tag>`; never a floating tag)
FROM quay.io/pypa/manylinux_2_28_x86_64@sha256:d632b5e68ab39e59e128dcf0e59e438b26f122d7f2d45f3eea69ffd2877ab017

ARG ROCM_VERSION=7.2.2
ARG ROCM_REPO=https://repo.radeon.com/rocm/el8/7.2.2/main
ARG GRAPHICS_REPO=https://repo.radeon.com/graphics/7.2.1/el/8/main/x86_64/
ARG ROCM_GPG_KEY=https://repo.radeon.com/rocm/rocm.gpg.key
# install.yaml's package sets: compiler, torch (the headers ATen/hip/HIPContext.h includes), libraries
ARG ROCM_PACKAGES="hip-devel hipcc rocm-llvm rocm-device-libs rocm-core rocminfo hipblas-devel hipblaslt-devel hipsparse-devel hipsolver-devel rocblas-devel rocsolver-devel rocsparse-devel hiprand-devel rocrand-devel hipcub-devel rocprim-devel rocthrust-devel hipfft-devel rocfft-devel rccl-devel"
# The gcc-toolset hipcc's clang and g++ both use (PyPA's base carries a newer one, which ROCm's LLVM
# may not support yet: TheRock and PyTorch pin the toolset too)
ARG GCC_TOOLSET=13
# The processors whose rocBLAS/hipBLASLt kernel files stay (';'-separated): a build passes its jobs'
# archs; "all" keeps every one
ARG KEEP_GFX_ARCHS=all

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

COPY manylinux_2_28-rocm.tools.txt /tmp/requirements/
COPY manylinux_2_28-rocm.lean.sh /opt/rocm-buildkit/lean.sh
COPY wheels/ /tmp/wheels/

# One layer: the toolset, AMD's repositories and packages, the kernel files of other archs removed
# (so they never reach a layer), clang pointed at the toolset, the compiler-cache links, the tools.
# The ROCm repository URL pins the release, so every ROCm package comes from it: DL3041 (pin each dnf
# package) is ignored on purpose, as for the toolset and EPEL's ccache, whose versions the base digest
# and EL8's repositories decide. SC2016 is ignored for the wrappers' text, whose ${BUILDKIT_HIP_LAUNCHER}
# and "$@" expand when a wrapper runs, not here.
# hadolint ignore=DL3041,SC2016
RUN dnf remove -y 'gcc-toolset-*' \
 && dnf install -y --setopt=install_weak_deps=False \
      "gcc-toolset-${GCC_TOOLSET}-gcc" "gcc-toolset-${GCC_TOOLSET}-gcc-c++" \
      "gcc-toolset-${GCC_TOOLSET}-gcc-gfortran" "gcc-toolset-${GCC_TOOLSET}-binutils" \
      "gcc-toolset-${GCC_TOOLSET}-libstdc++-devel" "gcc-toolset-${GCC_TOOLSET}-libatomic-devel" \
 && printf '%s\n' \
      "[rocm]" "name=ROCm ${ROCM_VERSION}" "baseurl=${ROCM_REPO}" "enabled=1" "priority=50" \
      "gpgcheck=1" "gpgkey=${ROCM_GPG_KEY}" "" \
      "[amdgraphics]" "name=AMD graphics for ROCm ${ROCM_VERSION} (not needed to compile)" \
      "baseurl=${GRAPHICS_REPO}" "enabled=1" "priority=50" "skip_if_unavailable=1" \
      "gpgcheck=1" "gpgkey=${ROCM_GPG_KEY}" \
      > /etc/yum.repos.d/rocm.repo \
 && rpm --import "${ROCM_GPG_KEY}" \
 && dnf install -y epel-release \
 && dnf install -y --setopt=install_weak_deps=False ccache ${ROCM_PACKAGES} \
 && dnf clean all \
 && rm -rf /var/cache/dnf \
 && test -x "/opt/rocm-${ROCM_VERSION}/bin/hipcc" \
 && ln -sfn "/opt/rocm-${ROCM_VERSION}" /opt/rocm \
 && sh /opt/rocm-buildkit/lean.sh "${KEEP_GFX_ARCHS}" "/opt/rocm-${ROCM_VERSION}" \
 && gcc_dir="/opt/rh/gcc-toolset-${GCC_TOOLSET}/root/usr/lib/gcc/x86_64-redhat-linux/${GCC_TOOLSET}" \
 && test -d "$gcc_dir" \
 && llvm_bin=$(dirname "$(readlink -f /opt/rocm/llvm/bin/clang)") \
 && for cfg in clang.cfg clang++.cfg; do \
      test ! -e "$llvm_bin/$cfg" || { echo "ROCm ships $llvm_bin/$cfg: merge --gcc-install-dir into it" >&2; exit 1; }; \
      printf -- '--gcc-install-dir=%s\n' "$gcc_dir" > "$llvm_bin/$cfg"; \
    done \
 && /opt/rocm/llvm/bin/clang++ -v -x c++ -E -o /dev/null /dev/null 2>&1 \
      | grep -F "Selected GCC installation: /opt/rh/gcc-toolset-${GCC_TOOLSET}/" \
 && mkdir -p /usr/lib64/ccache \
 && for cc in gcc g++ cc c++; do ln -sfn ../../bin/ccache "/usr/lib64/ccache/$cc"; done \
 && mkdir -p /opt/rocm-buildkit/hip-ccache \
 && for tool in /opt/rocm/llvm/bin/*; do ln -s "$tool" /opt/rocm-buildkit/hip-ccache/; done \
 && for cc in clang clang++; do \
      rm "/opt/rocm-buildkit/hip-ccache/$cc" \
      && printf '#!/bin/sh\nexec "${BUILDKIT_HIP_LAUNCHER:-ccache}" /opt/rocm/llvm/bin/%s "$@"\n' "$cc" > "/opt/rocm-buildkit/hip-ccache/$cc" \
      && chmod 755 "/opt/rocm-buildkit/hip-ccache/$cc"; \
    done

RUN /opt/python/cp312-cp312/bin/python -m venv /opt/buildkit-tools \
 && /opt/buildkit-tools/bin/pip install --no-cache-dir --no-index --find-links=/tmp/wheels \
      --require-hashes -r /tmp/requirements/manylinux_2_28-rocm.tools.txt \
 && for tool in auditwheel cmake ctest ninja; do ln -sfn "/opt/buildkit-tools/bin/$tool" "/usr/local/bin/$tool"; done \
 && rm -rf /tmp/wheels /tmp/requirements \
 && git config --global --add safe.directory '*'

# PATH and the library paths name the pinned toolset only (the base's point at the toolset removed
# above); /usr/local/bin holds auditwheel, cmake, ninja and patchelf
ENV DEVTOOLSET_ROOTPATH=/opt/rh/gcc-toolset-${GCC_TOOLSET}/root \
    PATH=/opt/rocm/bin:/opt/rh/gcc-toolset-${GCC_TOOLSET}/root/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LD_LIBRARY_PATH=/opt/rocm/lib:/opt/rh/gcc-toolset-${GCC_TOOLSET}/root/usr/lib64:/opt/rh/gcc-toolset-${GCC_TOOLSET}/root/usr/lib \
    ROCM_PATH=/opt/rocm \
    HIP_PATH=/opt/rocm \
    HIP_PLATFORM=amd

# hipcc (and CMake's HIP compiler) must use the pinned toolset, g++ must be it, and the tools must be
# the pinned ones: a failure here names the gap instead of a wrong wheel later
RUN g++ -dumpversion | grep -qx "${GCC_TOOLSET}\(\..*\)\?" \
 && hipcc -v -x c++ -E -o /dev/null /dev/null 2>&1 | grep -F "gcc-toolset-${GCC_TOOLSET}/" \
 && auditwheel --version | grep -F 'auditwheel 6.8.2' \
 && cmake --version | grep -F 'cmake version 3.31.10' \
 && ninja --version | grep -Fx '1.13.0' \
 && for py in cp310-cp310 cp311-cp311 cp312-cp312 cp313-cp313 cp314-cp314; do test -x "/opt/python/$py/bin/python"; done

LABEL org.opencontainers.image.title="rocm-buildkit manylinux_2_28-rocm builder" \
      io.rocm-buildkit.rocm-version="${ROCM_VERSION}" \
      io.rocm-buildkit.gcc-toolset="${GCC_TOOLSET}" \
      io.rocm-buildkit.keep-gfx-archs="${KEEP_GFX_ARCHS}"
