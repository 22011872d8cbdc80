#!/bin/sh
# Link every ROCm development library (lib<name>.so of a ROCm library package) into
# /opt/buildkit/rocm-lib and into the library folder of each compatibility sysroot: a sysroot build
# links ROCm's libraries (-lamdhip64, -lhipblas) while the image's own glibc and libstdc++ stay out
# of the linker's reach. Run after each install of ROCm packages (the builder's Dockerfile, the end
# of sysroot.sh, a recipe's image.packages layer).
set -eu
mkdir -p /opt/buildkit/rocm-lib
for lib in /usr/lib/x86_64-linux-gnu/lib*.so; do
  case $(basename "$lib") in
    libamdhip64.so|libhiprtc.so|libhsa-runtime64.so|libamd_comgr.so|libroc*.so|libhip*.so|librccl.so|libMIOpen.so|libroctx64.so|libroctracer64.so)
      ln -sfn "$lib" /opt/buildkit/rocm-lib/
      for dir in /opt/buildkit/sysroots/*/usr/lib/x86_64-linux-gnu; do
        [ -d "$dir" ] && ln -sfn "$lib" "$dir/"
      done ;;
  esac
done
