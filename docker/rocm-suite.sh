#!/bin/sh
# Take the ROCm packages of one Debian suite: rocm-suite.sh SUITE
# SUITE is the suite of the image's ROCm release (experimental: 7.2; unstable/sid: 6.4, nothing to do).
# Its apt source is added and every ROCm package name is pinned to it (priority 990), so that a later
# `apt-get install` -- a recipe's image.packages, a smoke entry's packages -- takes the release's own
# packages (libhiprand1 7.2.4 from experimental), never sid's older ones beside them (sid's libhiprand1
# depends on libamdhip64-6: "Unable to satisfy dependencies"). glibc, GCC and Python stay the base's.
# Used by the builder and runtime images of the Debian sid ROCm profiles alike.
set -eu
suite=$1
case $suite in unstable | sid) exit 0 ;; esac
echo "deb http://deb.debian.org/debian $suite main" >/etc/apt/sources.list.d/rocm-suite.list
printf 'Package: %s\nPin: release a=%s\nPin-Priority: 990\n' \
  "hipcc libamdhip64* libamd-comgr* libhsa-runtime* libhiprtc* rocm-* librocm* libamd-smi* librocblas* libhipblas* libhipblaslt* librocsolver* libroctx64* libroctracer* librocsparse* libhipsparse* librocrand* libhiprand* librocprim* libhipcub* librocfft* libhipfft* libhipsolver* librccl* libmiopen* libhipsparselt* libcomposable-kernel* librocwmma* librocthrust*" \
  "$suite" >/etc/apt/preferences.d/rocm-suite
