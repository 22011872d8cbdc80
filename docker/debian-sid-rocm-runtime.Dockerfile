# debian-sid-rocm-runtime: smoke-test images for wheels of the debian-sid-rocm builders. Debian sid
# with CPython 3.13, 3.14 and 3.15 (python3.X, venv) and the HIP runtime of one ROCm release
# (RUNTIME_PACKAGES from ROCM_SUITE, pinned there like the builder's), which the wheels do not
# carry. The BLAS (or any other ROCm) libraries a recipe links come through its smoke entry's
# `packages:` (librocblas5, libhipblas3, ...), installed in a layer over this image from the same
# suite. No compiler, no sysroot: a wheel that imports here needs nothing but its declared runtime.
ARG BASE_IMAGE=debian:sid-slim
FROM ${BASE_IMAGE}

ARG ROCM_SUITE=experimental
ARG RUNTIME_PACKAGES="libamdhip64-7"
ARG PYTHONS="3.13 3.14 3.15"

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

COPY rocm-suite.sh /usr/local/share/rocm-buildkit/
# hadolint ignore=DL3008,SC2086
RUN /usr/local/share/rocm-buildkit/rocm-suite.sh "$ROCM_SUITE" \
 && echo 'Acquire::Check-Valid-Until "false";' >/etc/apt/apt.conf.d/99buildkit-valid-until \
 && apt-get update -qq \
 && pys=""; for v in $PYTHONS; do pys="$pys python$v python$v-venv"; done \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ${RUNTIME_PACKAGES} $pys python3 python3-venv \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

LABEL org.opencontainers.image.title="rocm-buildkit debian sid runtime for smoke tests" \
      io.rocm-buildkit.rocm-suite="${ROCM_SUITE}"
