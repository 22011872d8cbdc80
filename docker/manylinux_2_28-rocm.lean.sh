#!/bin/sh
# Remove the GPU kernel libraries of the archs a builder image does not build for.
#
#   manylinux_2_28-rocm.lean.sh KEEP ROOT
#
# KEEP  the processors whose kernels stay, ';'-separated (gfx90a;gfx942), or "all" to keep everything
# ROOT  the ROCm install (/opt/rocm-7.2.2)
#
# rocBLAS (lib/rocblas/library), hipBLASLt (lib/hipblaslt/library) and hipSPARSELt
# (lib/hipsparselt/library) ship one set of Tensile code objects and catalogues per processor
# (TensileLibrary_..._gfx942.co, Kernels.so-000-gfx90a-xnack-.hsaco, TensileLibrary_lazy_gfx950.dat,
# ..., or a gfx942/ folder of them): several GB for every gfx target a release supports. A compile needs none of them (they are loaded
# at run time), so a file whose name names a processor outside KEEP is removed; files naming none stay.
# The Dockerfile runs this in the RUN that installs ROCm, so the removed bytes never reach a layer.
# Prints what it removed, per library, and exits non-zero when KEEP names no processor.
set -eu
keep=${1:?usage: $0 KEEP ROOT}
root=${2:?usage: $0 KEEP ROOT}
if [ "$keep" = all ]; then
  echo "lean: KEEP_GFX_ARCHS=all, every kernel library kept"
  exit 0
fi
case "$keep" in
  *gfx*) ;;
  *) echo "lean: KEEP_GFX_ARCHS must list processors such as gfx942;gfx950 (or be all), not '$keep'" >&2; exit 2 ;;
esac
for lib in rocblas hipblaslt hipsparselt; do
  dir="$root/lib/$lib/library"
  [ -d "$dir" ] || continue
  removed=0
  kept=0
  # a file or a folder (gfx942/) naming a processor; a matched folder is not descended into
  for path in $(find "$dir" -mindepth 1 -name '*gfx*' -prune | sort); do
    arch=$(basename "$path" | grep -o 'gfx[0-9a-f]*' | head -n 1)
    case ";$keep;" in
      *";$arch;"*) kept=$((kept + 1)) ;;
      *) rm -rf "$path"; removed=$((removed + 1)) ;;
    esac
  done
  echo "lean: $lib: removed $removed kernel files, kept $kept (${keep})"
done
