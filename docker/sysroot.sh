#!/bin/bash
# Make the compatibility sysroot of a Debian ROCm builder and its compiler wrappers.
#   sysroot.sh NAME PACKAGES_FILE SUITE LLVM_MAJOR
# NAME            the sysroot's name (glibc2.31): /opt/buildkit/sysroots/NAME
# PACKAGES_FILE   "name version sha256" lines (sysroot-glibc2.31.txt)
# SUITE           the Debian suite the packages come from (bullseye)
# LLVM_MAJOR      the clang that compiles against it (22: /usr/lib/llvm-22/bin/clang)
#
# The packages are downloaded from the suite (pinned at priority 1: nothing from it is ever
# installed), checked against their sha256 and unpacked with dpkg-deb -x. Absolute symlinks are
# made relative to the sysroot. Then:
#   /opt/buildkit/sysroots/NAME/bin/   cc c++ gcc g++ x86_64-linux-gnu-gcc x86_64-linux-gnu-g++ clang
#                                      clang++: clang-LLVM_MAJOR with --sysroot, --gcc-install-dir
#                                      (GCC 10's headers, crt files and libstdc++), and the ROCm
#                                      headers of /usr/include after the sysroot's (-idirafter);
#                                      a link also gets --allow-shlib-undefined (see wrapper below)
#   /opt/buildkit/sysroots/NAME/toolchain.cmake   CMAKE_SYSROOT and those compilers for CMake
#   (the variables a build sets to use it are in profiles.toml and buildkit/build/cibw.py)
#   /opt/buildkit/rocm-lib/                        links to the image's ROCm libraries only (the
#                                                 linker must not see the new glibc's libraries)
set -euo pipefail
name=$1 packages=$2 suite=$3 llvm=$4
root=/opt/buildkit/sysroots/$name
mirror=$({ sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources
  sed -n 's/^deb \(http[^ ]*\) .*/\1/p' /etc/apt/sources.list; } 2>/dev/null | head -1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
echo "deb $mirror $suite main" >/etc/apt/sources.list.d/buildkit-sysroot.list
printf 'Package: *\nPin: release n=%s\nPin-Priority: 1\n' "$suite" >/etc/apt/preferences.d/buildkit-sysroot
apt-get -o Acquire::Check-Valid-Until=false update -qq
mkdir -p "$root"
work=$(mktemp -d)
chmod 755 "$work"
cd "$work"
grep -v '^#' "$packages" | while read -r pkg version sha; do
  [ -n "$pkg" ] || continue
  apt-get download -q "$pkg=$version" >/dev/null
  deb=$(ls "${pkg}"_*.deb)
  echo "$sha  $deb" | sha256sum -c --quiet - || { echo "sysroot: $deb: sha256 differs from $packages" >&2; exit 1; }
  dpkg-deb -x "$deb" "$root"
done
rm -rf "$work" /etc/apt/sources.list.d/buildkit-sysroot.list /etc/apt/preferences.d/buildkit-sysroot
# apt-get update left its package caches (/var/cache/apt/*.bin, 158 MB) in the layer: not the sysroot's
apt-get clean
find "$root" -type l | while read -r link; do
  target=$(readlink "$link")
  case $target in /*) ln -sfn "$root$target" "$link" ;; esac
done
gcc_dir=$(ls -d "$root"/usr/lib/gcc/x86_64-linux-gnu/* | sort -V | tail -1)
flags="--sysroot=$root --gcc-install-dir=$gcc_dir"
mkdir -p "$root/bin" /opt/buildkit/rocm-lib
# A link (no -c, -S, -E, -M, -MM or -fsyntax-only among the arguments) leaves the glibc the ROCm
# libraries need themselves (>= 2.34: libamdhip64's pthread_attr_getguardsize, Debian builds them on
# 2.38+) and their own dependencies (libhsa-runtime64.so.1) to the runtime: --allow-shlib-undefined,
# the default for shared libraries. An executable linking libamdhip64 fails without it, and CMake's
# HIP compiler identification links one: CMake then knows no HIP compiler and compiles .cu files
# without -x hip. A compile gets nothing (clang warns about linker arguments it does not use).
wrapper() { # wrapper NAME DRIVER
  cat >"$root/bin/$1" <<WRAPPER
#!/bin/sh
for a; do
  case \$a in -c|-S|-E|-M|-MM|-fsyntax-only) exec /usr/lib/llvm-$llvm/bin/$2 $flags -idirafter /usr/include "\$@" ;; esac
done
exec /usr/lib/llvm-$llvm/bin/$2 $flags -idirafter /usr/include "\$@" -Wl,--allow-shlib-undefined
WRAPPER
}
for c in cc gcc x86_64-linux-gnu-gcc clang; do wrapper "$c" clang; done
for c in c++ g++ x86_64-linux-gnu-g++ clang++; do wrapper "$c" clang++; done
chmod 755 "$root"/bin/*
cat >"$root/toolchain.cmake" <<CMAKE
# rocm-buildkit compatibility sysroot $name (glibc and libstdc++ of Debian $suite)
set(CMAKE_SYSROOT "$root")
set(CMAKE_C_COMPILER "$root/bin/cc")
set(CMAKE_CXX_COMPILER "$root/bin/c++")
set(CMAKE_HIP_COMPILER "$root/bin/clang++")
set(CMAKE_HIP_FLAGS_INIT "--rocm-path=/usr")
# ROCm's CMake packages live outside the sysroot (/usr/lib/x86_64-linux-gnu/cmake)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
CMAKE
# ROCm's development libraries, reachable from the sysroot's library folder
/opt/buildkit/share/rocm-lib-links.sh
