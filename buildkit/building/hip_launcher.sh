#!/bin/sh
# The HIP compile launcher of rocm-buildkit (buildkit/building/ccache.py stages it in the build as
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
#
# The host CPU baseline (issue 38): host code built for the build machine's CPU dies with SIGILL on
# a user's. `-march=native` and `-mcpu=native` are refused in every compile that comes here (they
# depend on the machine the build ran on); with BUILDKIT_HOST_ISA set (the recipe's host_isa.level:
# x86-64, x86-64-v2, x86-64-v3 or x86-64-v4; unset on an x86_64 machine: the policy's baseline,
# x86-64, v1, for every manylinux and musllinux policy), so is any -march=CPU or -mFEATURE that asks for more
# (-march=x86-64-v4, -march=skylake-avx512, -mavx512f, -mavx2 ...), except in the compile of a
# source matching a glob of BUILDKIT_HOST_ISA_ALLOW (runtime-dispatched kernels; never native). The
# refusal names the flag, the file and the command, and the compile fails. With
# BUILDKIT_HOST_ISA_REWRITE=1 the flag is rewritten to the level (-march=x86-64-v2) or dropped
# instead, and the launcher says so. With BUILDKIT_HOST_ISA_LOG set (the build sets it), each ISA flag
# of a compile (-march=, -mcpu=, an -m feature of a level) is appended there, one `ACTION FLAG [TO]` a
# line, ACTION one of kept, allowed, rewrote (FLAG TO), dropped, refused: the manifest's host_isa.
if [ "$#" -eq 0 ]; then
  echo "hip-launcher: usage: hip-launcher COMPILER ARG..." >&2
  exit 2
fi
compiler=$1
shift

isa_rank() { # a -march value -> the x86-64 level it needs (0: not an x86 CPU this table knows)
  case $1 in
    x86-64 | k8* | opteron* | athlon64* | nocona | core2 | bonnell | atom | generic) echo 1 ;;
    x86-64-v2 | nehalem | corei7 | westmere | silvermont | slm | goldmont | goldmont-plus | tremont | \
      btver1 | btver2) echo 2 ;;
    x86-64-v3 | sandybridge | corei7-avx | ivybridge | core-avx-i | haswell | core-avx2 | broadwell | \
      skylake | alderlake | raptorlake | meteorlake | arrowlake* | lunarlake | gracemont | \
      sierraforest | grandridge | clearwaterforest | znver1 | znver2 | znver3 | bdver*) echo 3 ;;
    x86-64-v4 | skylake-avx512 | cascadelake | cooperlake | cannonlake | icelake-* | tigerlake | \
      rocketlake | sapphirerapids | emeraldrapids | graniterapids* | diamondrapids | knl | knm | \
      znver4 | znver5) echo 4 ;;
    *) echo 0 ;;
  esac
}

flag_rank() { # a -m flag -> the x86-64 level the feature it turns on belongs to (0: none)
  case $1 in
    -mavx512* | -mavx10* | -mamx*) echo 4 ;;
    -mavx | -mavx2 | -mfma | -mbmi | -mbmi2 | -mf16c | -mlzcnt | -mmovbe | -mavxvnni*) echo 3 ;;
    -msse3 | -mssse3 | -msse4 | -msse4.1 | -msse4.2 | -mpopcnt | -mcx16 | -msahf) echo 2 ;;
    *) echo 0 ;;
  esac
}

note() { # ACTION FLAG [TO]: a line of the host ISA log, its folder made at the first
  [ -n "${BUILDKIT_HOST_ISA_LOG:-}" ] || return 0
  { printf '%s\n' "$*" >>"$BUILDKIT_HOST_ISA_LOG"; } 2>/dev/null ||
    { mkdir -p "${BUILDKIT_HOST_ISA_LOG%/*}" && printf '%s\n' "$*" >>"$BUILDKIT_HOST_ISA_LOG"; } 2>/dev/null || :
}

level=${BUILDKIT_HOST_ISA:-}
if [ -z "$level" ] && [ "$(uname -m)" = x86_64 ]; then
  # the recipe is silent: the policy's baseline, x86-64 (v1) for every manylinux and musllinux policy
  level=x86-64
fi
max=0
case $level in
  '') ;;
  *) max=$(isa_rank "$level") ;;
esac
sources=
skip=0
for arg do
  if [ "$skip" = 1 ]; then
    skip=0
    continue
  fi
  case $arg in
    -o | -MF | -MT | -MQ | -I | -isystem | -iquote | -idirafter | -include | -imacros | -D | -U | \
      -Xclang | -mllvm | -Xlinker | -Xarch_* | -target | -L | -l | -isysroot | -arch | -aux-triple | -x)
      skip=1 ;;
    -*) ;;
    *) sources="$sources $arg" ;;
  esac
done
allowed=0
for pattern in ${BUILDKIT_HOST_ISA_ALLOW:-}; do
  for source in $sources; do
    # shellcheck disable=SC2254 # the recipe's host_isa.allow are globs: matched as such
    case $source in $pattern | */$pattern) allowed=1 ;; esac
  done
done
count=$#
refused=
for arg do
  asked=0
  native=0
  isa=1 # an ISA flag: logged
  case $arg in
    -mtune=*) isa=0 ;; # tuning: no instruction it does not have
    -march=native | -mcpu=native) native=1 ;;
    -march=*)
      asked=$(isa_rank "${arg#-march=}")
      [ "$asked" = 0 ] && [ "$max" != 0 ] && asked=5 # an x86 CPU this table does not know
      ;;
    -mcpu=*) ;;
    -m*)
      asked=$(flag_rank "$arg")
      [ "$asked" = 0 ] && isa=0
      ;;
    *) isa=0 ;;
  esac
  over=0
  if [ "$native" = 1 ]; then
    over=1
  elif [ "$max" != 0 ] && [ "$asked" -gt "$max" ] && [ "$allowed" = 0 ]; then
    over=1
  fi
  if [ "$over" = 1 ] && [ "${BUILDKIT_HOST_ISA_REWRITE:-}" = 1 ]; then
    case $arg in
      -march=*)
        to="-march=${level:-x86-64}"
        echo "buildkit: host ISA: rewrote $arg to $to in the compile of${sources:- (no file)}" >&2
        note rewrote "$arg" "$to"
        set -- "$@" "$to"
        ;;
      *)
        echo "buildkit: host ISA: dropped $arg from the compile of${sources:- (no file)}" >&2
        note dropped "$arg"
        ;;
    esac
    continue
  fi
  if [ "$over" = 1 ]; then
    refused="$refused $arg"
    note refused "$arg"
  elif [ "$isa" = 1 ] && [ "$max" != 0 ] && [ "$asked" -gt "$max" ]; then
    note allowed "$arg"
  elif [ "$isa" = 1 ]; then
    note kept "$arg"
  fi
  set -- "$@" "$arg"
done
shift "$count"
if [ -n "$refused" ]; then
  if [ -n "$level" ]; then
    why="more than the host ISA the build holds, $level (the recipe's host_isa.level; without one, the policy's baseline x86-64)"
  else
    why="the build machine's own CPU"
  fi
  echo "buildkit: host ISA: refused$refused in the compile of${sources:- (no file)}: it asks for $why, so the wheel's host code would die with SIGILL on an older CPU; native tuning is never allowed (recipe: host_isa.allow names the sources of runtime-dispatched kernels, host_isa.rewrite: true rewrites the flag to the level). Command: $compiler $*" >&2
  exit 1
fi

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
