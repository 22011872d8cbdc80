#!/bin/bash
# Runs inside a debian:sid-slim container (tests/helpers/standin_sdk/__init__.py starts it): downloads the
# .deb files of debs.lock at their pinned versions, refuses any whose sha256 differs, unpacks them and lays
# out the stand-in SDK's wheels (assemble.py) in /out. `build.sh relock` prints the lock's packages with
# the versions and sha256 the mirror serves now instead.
set -euo pipefail
here=$(dirname "$0")
uri=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
echo "deb ${uri:-http://deb.debian.org/debian} experimental main" >/etc/apt/sources.list.d/experimental.list
apt-get -o Acquire::Check-Valid-Until=false update -qq
if [ "${1:-}" = relock ]; then
  grep -v '^#' "$here/debs.lock" | while read -r pkg _ver _sha part; do
    [ -n "$pkg" ] || continue
    ver=$(apt-cache policy "$pkg" | awk '/Candidate:/{print $2}')
    if [ "$part" != sysdeps ]; then ver=$(apt-cache madison "$pkg" | awk -F'|' '/experimental/{gsub(/ /,"",$2); print $2; exit}'); fi
    sha=$(apt-cache show "$pkg=$ver" | awk '/^SHA256:/{print $2; exit}')
    printf '%-20s %-18s %s %s\n' "$pkg" "$ver" "$sha" "$part"
  done
  exit 0
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 patchelf >/dev/null
mkdir -p /debs /x /out
grep -v '^#' "$here/debs.lock" | while read -r pkg ver sha part; do
  [ -n "$pkg" ] || continue
  mkdir -p "/debs/$pkg" && (cd "/debs/$pkg" && apt-get download -qq -o APT::Sandbox::User=root "$pkg=$ver")
  deb=$(ls "/debs/$pkg"/*.deb)
  got=$(sha256sum "$deb" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then echo "$pkg=$ver: sha256 $got, debs.lock pins $sha" >&2; exit 3; fi
  dpkg-deb -x "$deb" "/x/$pkg"
done
python3 "$here/assemble.py" --lock "$here/debs.lock" --trees /x --template "$here/template" --out /out
