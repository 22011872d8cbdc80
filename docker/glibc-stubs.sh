#!/bin/bash
# An older glibc's ABI for a compatibility sysroot, from the link stubs of ziglang (PyPI).
#
#   glibc-stubs.sh make VERSION ZIGLANG_WHEEL OUT
#       (a build stage of its own: zig never reaches the image) `zig cc -target
#       x86_64-linux-gnu.VERSION` links a program against every glibc library, which leaves zig's
#       stubs of them in its cache: libc.so.6, libm.so.6, libpthread.so.0, libdl.so.2, librt.so.1,
#       libutil.so.1, libresolv.so.2, generated from glibc's own ABI lists. Each defines exactly
#       the symbols and version nodes glibc VERSION has (newest node GLIBC_VERSION). Copied to OUT.
#   glibc-stubs.sh install NAME VERSION STUBS
#       (after sysroot.sh NAME ...) the sysroot's libraries of those names are replaced by the stubs:
#       a link binds every versioned symbol to a version <= GLIBC_VERSION (exp, log and pow to
#       GLIBC_2.2.5, not GLIBC_2.29). The sysroot's headers are still the newer glibc's, so they
#       declare functions VERSION lacks (gettid: 2.30): for each, the libc.so linker script gets a
#       PROVIDE (defined only when an object of the link references it and nothing defines it)
#       and an ASSERT that it stays undefined, so such a reference is a link error naming the
#       function, its glibc and the sysroot, even in a shared library (where an undefined symbol
#       is otherwise allowed and would need GLIBC_2.30 at run time). A reference from a shared
#       library the link reads (libamdhip64's own) is not one: those are the runtime's business.
#       libstdc++'s c++config.h stops using what VERSION lacks (pthread_cond_clockwait & co.,
#       glibc 2.30), as a GCC configured on that glibc would.
set -euo pipefail
libs="libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libresolv.so.2"

make_stubs() { # VERSION WHEEL OUT
  local version=$1 wheel=$2 out=$3 work
  work=$(mktemp -d)
  unzip -q "$wheel" 'ziglang/*' -d "$work"
  chmod 755 "$work/ziglang/zig"
  printf 'int main(void) { return 0; }\n' >"$work/t.c"
  ZIG_GLOBAL_CACHE_DIR="$work/cache" ZIG_LOCAL_CACHE_DIR="$work/cache" \
    "$work/ziglang/zig" cc -target "x86_64-linux-gnu.$version" "$work/t.c" -o "$work/t" \
    -lm -lpthread -ldl -lrt -lutil -lresolv
  local dir
  dir=$(dirname "$(find "$work/cache" -name libc.so.6 | head -1)")
  mkdir -p "$out"
  for lib in $libs; do
    newest=$(readelf -V --wide "$dir/$lib" | grep -o 'Name: GLIBC_[0-9.]*' | sed 's/Name: GLIBC_//' | sort -V | tail -1)
    [ "$newest" = "$version" ] || { echo "glibc-stubs: $lib: newest node GLIBC_$newest, not GLIBC_$version" >&2; exit 1; }
    cp "$dir/$lib" "$out/$lib"
  done
  "$work/ziglang/zig" version >"$out/zig-version"
  rm -rf "$work"
}

# name@@GLIBC_x.y of every function a library defines at its default version
defined() { readelf --dyn-syms --wide "$1" | awk '$7 != "UND" && $8 ~ /@@GLIBC_[0-9]/ { print $8 }' | sort -u; }

install_stubs() { # NAME VERSION STUBS
  local name=$1 version=$2 stubs=$3
  local root=${BUILDKIT_SYSROOTS:-/opt/buildkit/sysroots}/$name
  local libdir=$root/lib/x86_64-linux-gnu script=$root/usr/lib/x86_64-linux-gnu/libc.so
  local guard
  guard=$(mktemp)
  for lib in $libs; do
    [ -e "$libdir/$lib" ] || { echo "glibc-stubs: $libdir/$lib missing" >&2; exit 1; }
    stub_names=$(defined "$stubs/$lib" | sed 's/@@.*//')
    # functions of the newer glibc the stub lacks: "name version"
    defined "$libdir/$lib" | sed 's/@@GLIBC_/ /' | while read -r fn ver; do
      grep -qx "$fn" <<<"$stub_names" || echo "$fn $ver"
    done >>"$guard"
    real=$(readlink -f "$libdir/$lib")
    rm -f "$libdir/$lib" "$real"
    cp "$stubs/$lib" "$libdir/$lib"
  done
  {
    printf '/* rocm-buildkit sysroot %s: the functions these headers declare that glibc %s lacks */\n' "$name" "$version"
    sort -u "$guard" | while read -r fn ver; do
      printf 'PROVIDE(%s = 0);\n' "$fn"
      printf 'ASSERT(!DEFINED(%s), "%s is glibc %s'"'"'s (GLIBC_%s): the sysroot %s links against glibc %s, which lacks it; use an older function, or a sysroot or image of glibc %s or newer");\n' \
        "$fn" "$fn" "$ver" "$ver" "$name" "$version" "$ver"
    done
  } >>"$script"
  echo "glibc-stubs: $name: $(wc -l <"$guard") functions newer than glibc $version guarded: $(cut -d' ' -f1 "$guard" | sort -u | tr '\n' ' ')"
  rm -f "$guard"
  # libstdc++ of a GCC configured on glibc $version would not use these (glibc 2.30's)
  [ "$(printf '%s\n' "$version" 2.30 | sort -V | head -1)" = 2.30 ] && return
  for config in "$root"/usr/include/x86_64-linux-gnu/c++/*/bits/c++config.h; do
    sed -i -E 's@^#define (_GLIBCXX_USE_PTHREAD_(COND_CLOCKWAIT|MUTEX_CLOCKLOCK|RWLOCK_CLOCKLOCK)) 1$@/* #undef \1 (rocm-buildkit: glibc '"$version"' lacks it) */@' "$config"
  done
  cp "$stubs/zig-version" "$root/glibc-stubs-zig-version"
}

case ${1:-} in
  make) shift; make_stubs "$@" ;;
  install) shift; install_stubs "$@" ;;
  *) echo "usage: glibc-stubs.sh make VERSION ZIGLANG_WHEEL OUT | install NAME VERSION STUBS" >&2; exit 2 ;;
esac
