# debian-runtime: a runtime image for smoke tests of wheels built on the Debian builder.
#
# What a user of a HIP extension wheel has at run time: a Python, and the HIP runtime library of
# the distribution (libamdhip64.so.5 from Debian's ROCm packaging), which rocm-buildkit excludes
# from wheels at repair. BASE_IMAGE picks the Debian release: trixie (glibc 2.41, GCC 14) by
# default, bookworm (glibc 2.36, GCC 12) for the "older runtime" case.
# No registry? `buildkit image seed debian:trixie-slim` / `debian:bookworm-slim` first.
ARG BASE_IMAGE=debian:trixie-slim
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Debian packages follow the suite of the base image (DL3008 ignored on purpose, as in debian-rocm).
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 \
      python3-venv \
      libamdhip64-5 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*

LABEL org.opencontainers.image.title="rocm-buildkit debian runtime for smoke tests"
