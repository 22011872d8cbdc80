# debian-torch-runtime: a runtime image for smoke tests of torch extensions built on the bookworm
# builder (debian-bookworm-rocm).
#
# What a user of such a wheel has at run time: Debian 12's Python 3.11, torch 2.13.0+cpu (and its
# dependencies) installed in the system site-packages, and Debian's HIP runtime (libamdhip64.so.5),
# which rocm-buildkit excludes from wheels at repair like torch's own libtorch_cpu.so and libc10.so.
# `buildkit smoke` makes its venv with --system-site-packages, so this torch is the one the wheel
# finds. The wheels are pinned with hashes in debian-torch-runtime.txt and downloaded on the host by
# `buildkit image build debian-torch-runtime` (the 191 MB torch wheel included); apt-get needs only
# the Debian mirror. No registry? `buildkit image seed debian:bookworm-slim` first.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Debian packages follow the suite of the base image (DL3008 ignored on purpose, as in debian-rocm).
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3.11 \
      python3.11-venv \
      python3-pip \
      libamdhip64-5 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

COPY debian-torch-runtime.txt /tmp/requirements/
COPY wheels/ /tmp/wheels/

# the system site-packages (/usr/local/lib/python3.11/dist-packages): Debian marks its Python
# externally managed, and this image is nothing but that Python, torch and the HIP runtime. A venv
# gets its own setuptools from /usr/share/python-wheels (bookworm's 66.1.1), which would shadow the
# system one and fail torch's `setuptools>=77.0.3` when the smoke test installs a wheel requiring torch
# without an index: that wheel is replaced by the pinned setuptools (Debian's ensurepip takes
# whatever wheels that folder holds).
RUN python3.11 -m pip install --no-cache-dir --no-index --find-links=/tmp/wheels --require-hashes \
      --break-system-packages -r /tmp/requirements/debian-torch-runtime.txt \
 && rm /usr/share/python-wheels/setuptools-*.whl \
 && cp /tmp/wheels/setuptools-84.2.1-py3-none-any.whl /usr/share/python-wheels/ \
 && rm -rf /tmp/wheels /tmp/requirements \
 && python3.11 -c "import torch; assert torch.__version__ == '2.13.0+cpu', torch.__version__" \
 && python3.11 -m venv --system-site-packages /tmp/venv-check \
 && /tmp/venv-check/bin/python -c "import setuptools, torch; assert setuptools.__version__ == '84.2.1'" \
 && rm -rf /tmp/venv-check

LABEL org.opencontainers.image.title="rocm-buildkit debian torch runtime for smoke tests"
