#!/bin/sh
# Link every ROCm development library (lib<name>.so of a ROCm library package) into
# /opt/buildkit/rocm-lib, the one library folder a sysroot build adds to the link line besides the
# sysroot: ROCm's libraries stay reachable, the image's own glibc and libstdc++ do not.
# Run after each install of ROCm packages (the builder's Dockerfile, a recipe's image.packages layer).
set -eu
mkdir -p /opt/buildkit/rocm-lib
for lib in /usr/lib/x86_64-linux-gnu/lib*.so; do
  case $(basename "$lib") in
    libamdhip64.so|libhiprtc.so|libhsa-runtime64.so|libamd_comgr.so|libroc*.so|libhip*.so|librccl.so|libMIOpen.so|libroctx64.so|libroctracer64.so)
      ln -sfn "$lib" /opt/buildkit/rocm-lib/ ;;
  esac
done
