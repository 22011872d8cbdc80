# debian-sid-torch-runtime: smoke tests of torch extensions built on debian-sid-rocm. Debian sid with
# bookworm's CPython 3.11 (the Python of the torch wheels reachable here), torch 2.13.0+cpu and its
# dependencies (hash-pinned in debian-torch-runtime.txt, downloaded on the host), and the HIP runtime
# of one ROCm release (RUNTIME_PACKAGES from ROCM_SUITE), which the wheels do not carry. pip is in
# python3.11's own site (bookworm's ensurepip is not installable beside sid's Python): smoke installs
# the wheel with pip --target when venv cannot make one.
ARG BASE_IMAGE=debian:sid-slim
FROM ${BASE_IMAGE}

ARG ROCM_SUITE=experimental
ARG RUNTIME_PACKAGES="libamdhip64-7"

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

COPY rocm-suite.sh /usr/local/share/rocm-buildkit/
# hadolint ignore=DL3008,SC2086
RUN /usr/local/share/rocm-buildkit/rocm-suite.sh "$ROCM_SUITE" \
 && echo "deb http://deb.debian.org/debian bookworm main" >/etc/apt/sources.list.d/bookworm.list \
 && printf 'Package: *\nPin: release n=bookworm\nPin-Priority: 100\n' >/etc/apt/preferences.d/bookworm \
 && echo 'Acquire::Check-Valid-Until "false";' >/etc/apt/apt.conf.d/99buildkit-valid-until \
 && apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES} python3.11 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

COPY debian-torch-runtime.txt /tmp/requirements/
COPY wheels/ /tmp/wheels/

RUN pipwhl=$(echo /tmp/wheels/pip-*.whl) \
 && python3.11 "$pipwhl/pip" install --no-cache-dir --no-index --find-links=/tmp/wheels \
      --break-system-packages pip \
 && python3.11 -m pip install --no-cache-dir --no-index --find-links=/tmp/wheels --require-hashes \
      --break-system-packages -r /tmp/requirements/debian-torch-runtime.txt \
 && rm -rf /tmp/wheels /tmp/requirements \
 && python3.11 -c "import torch; assert torch.__version__ == '2.13.0+cpu', torch.__version__"

LABEL org.opencontainers.image.title="rocm-buildkit debian sid torch runtime for smoke tests" \
      io.rocm-buildkit.rocm-suite="${ROCM_SUITE}"
