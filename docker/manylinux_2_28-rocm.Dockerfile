# manylinux_2_28-rocm: the production HIP builder of rocm-buildkit.
#
# The pypa manylinux_2_28 image (AlmaLinux 8, glibc 2.28) pinned by digest, plus AMD's ROCm packages
# for RHEL 8 from repo.radeon.com. Everything manylinux ships is kept: the gcc-toolset on PATH (its
# libstdc++ links statically what glibc 2.28's system libstdc++ lacks), /opt/python/cp3*, auditwheel
# and patchelf, AUDITWHEEL_PLAT. ROCm lands in /opt/rocm-$ROCM_VERSION (/opt/rocm links to it).
#
# Digest: the manylinux_2_28_x86_64 image pinned by iree-org/base-docker-images
# (dockerfiles/manylinux_x86_64.Dockerfile). Move it forward deliberately, never to a floating tag.
#
# The compiler cache (buildkit/build/ccache.py), used only by builds with the cache: /usr/lib64/ccache
# links gcc, g++, cc and c++ to ccache (first on PATH there, so ccache runs the gcc-toolset's compilers
# by name); AMD's compiled hipcc ignores HIP_CLANG_LAUNCHER but runs $HIP_CLANG_PATH/clang++, so
# /opt/rocm-buildkit/hip-ccache mirrors /opt/rocm/llvm/bin with clang and clang++ replaced by
# `exec ccache /opt/rocm/llvm/bin/clang++ "$@"` (such a build sets HIP_CLANG_PATH to it). Caching HIP
# compiles and reading the hit rate (`ccache --print-stats`) need ccache 4: check the version EPEL gives.
#
# Repository layout per ROCm release (AMD's install guide for RHEL 8):
#   ROCm 6.x: rocm/rhel8/$ROCM_VERSION/main           + amdgpu/$ROCM_VERSION/rhel/8.10/main/x86_64
#   ROCm 7.x: rocm/el8/$ROCM_VERSION/main             + graphics/$ROCM_VERSION/el/8.10/main/x86_64
# `buildkit image build manylinux_2_28-rocm --build-arg ROCM_VERSION=7.0.1 \
#    --build-arg ROCM_REPO=https://repo.radeon.com/rocm/el8/7.0.1/main \
#    --build-arg AMDGPU_REPO=https://repo.radeon.com/graphics/7.0.1/el/8.10/main/x86_64` selects 7.x.
FROM quay.io/pypa/manylinux_2_28_x86_64@sha256:8ab319e0ecea2f642b2436dbf736993f1af3051186d2e2fd27ac79a461f47191

ARG ROCM_VERSION=6.4.3
ARG ROCM_REPO=https://repo.radeon.com/rocm/rhel8/${ROCM_VERSION}/main
ARG AMDGPU_REPO=https://repo.radeon.com/amdgpu/${ROCM_VERSION}/rhel/8.10/main/x86_64
# The HIP compiler and device libraries; the math libraries an extension links against are a
# build argument (their -devel packages), so an image carries only what its recipes need.
ARG ROCM_PACKAGES="hip-devel hipcc rocm-llvm rocm-device-libs rocm-core rocminfo"
ARG ROCM_LIBRARY_PACKAGES="rocblas-devel hipblas-devel hipblaslt-devel"

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# The ROCm repository URL pins the release, so every ROCm package comes from that release only:
# DL3041 (pin each dnf package) is ignored on purpose; ccache comes from EPEL at its current build.
# hadolint ignore=DL3041
RUN printf '%s\n' \
      "[rocm]" "name=ROCm ${ROCM_VERSION}" "baseurl=${ROCM_REPO}" "enabled=1" "priority=50" \
      "gpgcheck=1" "gpgkey=https://repo.radeon.com/rocm/rocm.gpg.key" "" \
      "[amdgpu]" "name=AMD GPU userspace for ROCm ${ROCM_VERSION}" "baseurl=${AMDGPU_REPO}" \
      "enabled=1" "priority=50" "gpgcheck=1" "gpgkey=https://repo.radeon.com/rocm/rocm.gpg.key" \
      > /etc/yum.repos.d/rocm.repo \
 && dnf install -y epel-release \
 && dnf install -y --setopt=install_weak_deps=False ccache ${ROCM_PACKAGES} ${ROCM_LIBRARY_PACKAGES} \
 && dnf clean all \
 && rm -rf /var/cache/dnf \
 && test -x "/opt/rocm-${ROCM_VERSION}/bin/hipcc" \
 && ln -sfn "/opt/rocm-${ROCM_VERSION}" /opt/rocm \
 && mkdir -p /usr/lib64/ccache \
 && for cc in gcc g++ cc c++; do ln -sfn ../../bin/ccache "/usr/lib64/ccache/$cc"; done \
 && mkdir -p /opt/rocm-buildkit/hip-ccache \
 && for tool in /opt/rocm/llvm/bin/*; do ln -s "$tool" /opt/rocm-buildkit/hip-ccache/; done \
 && for cc in clang clang++; do \
      rm "/opt/rocm-buildkit/hip-ccache/$cc" \
      && printf '#!/bin/sh\nexec ccache /opt/rocm/llvm/bin/%s "$@"\n' "$cc" > "/opt/rocm-buildkit/hip-ccache/$cc" \
      && chmod 755 "/opt/rocm-buildkit/hip-ccache/$cc"; \
    done

ENV ROCM_PATH=/opt/rocm \
    HIP_PATH=/opt/rocm \
    HIP_PLATFORM=amd \
    PATH=/opt/rocm/bin:${PATH} \
    LD_LIBRARY_PATH=/opt/rocm/lib:${LD_LIBRARY_PATH}

LABEL org.opencontainers.image.title="rocm-buildkit manylinux_2_28-rocm builder" \
      io.rocm-buildkit.rocm-version="${ROCM_VERSION}"
