#!/bin/sh
# The builder-contract probe of rocm-buildkit (buildkit/image/probe.py runs it with /bin/sh in a
# throwaway container of the image, without network). Inputs, from the environment:
#   PROBE_PYTHONS  cibuildwheel tags to look for under /opt/python (cp313-cp313 cp39-cp39)
#   PROBE_ARCHS    target ids the HIP compiler must compile a kernel for (gfx90a gfx942)
#   PROBE_UV       1 when the build frontend needs uv
#   PROBE_LIBS     SONAMEs the image must hold (libamdhip64.so.7), looked for in PROBE_LIBDIRS
#   PROBE_LIBDIRS  the folders to look in (/opt/rocm/lib /usr/lib64)
# Output: one "<check><TAB><ok|missing|bad><TAB><detail>" line per check; the exit code is 0.
say() { printf '%s\t%s\t%s\n' "$1" "$2" "$(printf '%s' "$3" | tr '\t\n' '  ')"; }
has() { command -v "$1" >/dev/null 2>&1; }

for tag in ${PROBE_PYTHONS:-}; do
  py="/opt/python/$tag/bin/python"
  if [ -x "$py" ]; then
    say "python:$tag" ok "$("$py" -c 'import sys; print(sys.version.split()[0])' 2>&1)"
  else
    say "python:$tag" missing ""
  fi
done
for tool in auditwheel patchelf; do
  if has "$tool"; then say "$tool" ok "$("$tool" --version 2>&1)"; else say "$tool" missing ""; fi
done
say hip-platform ok "${HIP_PLATFORM-}"

HIPCC=$(command -v hipcc 2>/dev/null || true)
if [ -z "$HIPCC" ] && [ -x "${ROCM_PATH:-/opt/rocm}/bin/hipcc" ]; then
  HIPCC="${ROCM_PATH:-/opt/rocm}/bin/hipcc"
fi
if [ -z "$HIPCC" ]; then
  say hipcc missing ""
else
  say hipcc ok "$HIPCC"
  dir=$(mktemp -d 2>/dev/null || echo /tmp/buildkit-probe)
  mkdir -p "$dir"
  printf '#include <hip/hip_runtime.h>\n__global__ void buildkit_probe(int *p) { *p = 1; }\n' >"$dir/probe.hip"
  set --
  for arch in ${PROBE_ARCHS:-}; do set -- "$@" "--offload-arch=$arch"; done
  if out=$(HIP_PLATFORM=amd "$HIPCC" -c "$@" -o "$dir/probe.o" "$dir/probe.hip" 2>&1); then
    say hip-archs ok ""
  else
    say hip-archs bad "$(printf '%s' "$out" | tail -n 3)"
  fi
  gcc=$(HIP_PLATFORM=amd "$HIPCC" -v -x c++ -E -o /dev/null /dev/null 2>&1 |
    sed -n 's/^Selected GCC installation: //p' | head -n 1)
  say hipcc-gcc ok "$gcc"
fi
if has g++; then say gxx ok "$(g++ -dumpversion 2>&1)"; else say gxx missing ""; fi
for soname in ${PROBE_LIBS:-}; do
  found=""
  for libdir in ${PROBE_LIBDIRS:-}; do
    if [ -e "$libdir/$soname" ]; then found="$libdir/$soname"; break; fi
  done
  if [ -n "$found" ]; then say "lib:$soname" ok "$found"; else say "lib:$soname" missing ""; fi
done
if [ "${PROBE_UV:-}" = 1 ]; then
  if has uv; then say uv ok "$(uv --version 2>&1)"; else say uv missing ""; fi
fi
exit 0
