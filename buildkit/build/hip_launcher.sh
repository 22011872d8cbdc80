#!/bin/sh
# The HIP compile launcher of rocm-buildkit (buildkit/build/ccache.py stages it in the build as
# /project/.buildkit/hip-launcher). Run as `hip-launcher COMPILER ARG...` by every route of a HIP
# compile: the wrappers of hipcc's clang, HIP_CLANG_LAUNCHER and CMAKE_HIP_COMPILER_LAUNCHER.
#
# A HIP compile (-c, an input in the hip language: after -x hip, or a .hip file) without -cuid= or
# -fuse-cuid= gets -cuid=<16 hex>: the start of the sha256 of its arguments as received here, in
# their order, each ended by a NUL, leaving out what ccache leaves out of its hash: the compiler
# (CMake may name it through a masquerade in one build and not in another), the files it writes
# (-o, -MF, -MT, -MQ: CMake's try_compile names them at random) and the include folders (-I,
# -isystem, -iquote, -idirafter: the preprocessor mode hashes the text they give instead; the jobs
# of a matrix differ in -I/usr/include/python3.X, and a build frontend's environment may be at a
# random path). So clang names the translation unit (__hip_cuid_<md5 of the value>) from what the
# project asked, the same with or without ccache, and two compiles ccache takes for one get one ID.
# Left to itself clang (-fuse-cuid=hash) hashes the command line it runs, which ccache reorders, so
# a cached object differed from an uncached one.
#
# Then: `ccache COMPILER ARG...` when BUILDKIT_HIP_CCACHE is set (a build with the compiler cache),
# else `COMPILER ARG...`. CMake's C and C++ compiles come here too in a build with the cache
# (CMAKE_C/CXX_COMPILER_LAUNCHER): they only get that choice.
#
# A configure probe is never cached: a compile of a source in CMake's scratch folder
# (.../CMakeFiles/CMakeScratch/TryCompile-XXXXXX/, a new random name at every configure:
# check_c_source_compiles, FindThreads, check_function_exists) runs the compiler with
# CCACHE_DISABLE=1, which the compiler cache's masquerade (a sysroot wrapper's gcc) honours too. Its
# path makes it a miss every time, so caching it only fills the cache and counts a miss per probe
# in every rebuild; ccache itself leaves autoconf's conftest.c out for the same reason.
if [ "$#" -eq 0 ]; then
  echo "hip-launcher: usage: hip-launcher COMPILER ARG..." >&2
  exit 2
fi
compiler=$1
shift

compile=0
hip=0
cuid=0
probe=0
lang=
next=
for arg do
  case $next in
    lang) lang=$arg; next=; continue ;;
    value) next=; continue ;;
  esac
  case $arg in
    -c) compile=1 ;;
    -cuid=* | -fuse-cuid=*) cuid=1 ;;
    -x) next=lang ;;
    -x*) lang=${arg#-x} ;;
    -o | -MF | -MT | -MQ | -I | -isystem | -iquote | -idirafter | -include | -imacros | -D | -U | \
      -Xclang | -mllvm | -Xlinker | -Xarch_* | -target | -L | -l | -isysroot | -arch | -aux-triple)
      next=value ;;
    -*) ;;
    *)
      case $arg in */CMakeFiles/CMakeScratch/TryCompile-*/*) probe=1 ;; esac
      case $lang in
        hip) hip=1 ;;
        '' | none) case $arg in *.hip) hip=1 ;; esac ;;
      esac
      ;;
  esac
done

if [ "$probe" = 1 ]; then
  CCACHE_DISABLE=1
  export CCACHE_DISABLE
  exec "$compiler" "$@"
fi

if [ "$compile" = 1 ] && [ "$hip" = 1 ] && [ "$cuid" = 0 ]; then
  digest=$(
    skip=0
    for arg do
      if [ "$skip" = 1 ]; then
        skip=0
        continue
      fi
      case $arg in
        -o | -MF | -MT | -MQ | -I | -isystem | -iquote | -idirafter) skip=1 ;;
        -o* | -MF* | -MT* | -MQ* | -I* | -isystem* | -iquote* | -idirafter*) ;;
        *) printf '%s\000' "$arg" ;;
      esac
    done | sha256sum
  )
  digest=$(printf '%s' "$digest" | cut -c1-16)
  set -- "$@" "-cuid=$digest"
fi

if [ -n "${BUILDKIT_HIP_CCACHE:-}" ]; then
  exec ccache "$compiler" "$@"
fi
exec "$compiler" "$@"
