#!/usr/bin/env bash
# Give CI a Docker engine and the local base images rocm-buildkit builds from (Debian hosts, root).
#
#   1. apt-get install docker.io and debootstrap when missing;
#   2. unless an engine already answers (`docker info`), start dockerd in the background, logging
#      to $DOCKERD_LOG (default /var/log/dockerd.log), and wait until it answers;
#   3. seed debian:trixie-slim, debian:bookworm-slim and debian:sid-slim with `buildkit image seed` (debootstrap +
#      docker import) when the engine does not have them: no registry is needed.
# Exit 8 (DockerUnavailable) when no engine can be had. Needs `buildkit` installed (pip install -e .).
set -euo pipefail

DOCKERD_LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
WAIT_SECONDS=${DOCKERD_WAIT_SECONDS:-60}
BASE_IMAGES=${BUILDKIT_BASE_IMAGES:-"debian:trixie-slim debian:bookworm-slim debian:sid-slim"}
export PATH="$PATH:/usr/sbin:/sbin"

have() { command -v "$1" >/dev/null 2>&1; }

missing=()
have dockerd || missing+=(docker.io)
have debootstrap || missing+=(debootstrap)
if ((${#missing[@]})); then
  echo "install-docker: apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if docker info >/dev/null 2>&1; then
  echo "install-docker: engine already answers ($(docker info --format '{{.ServerVersion}}'))"
elif [[ -n "${DOCKER_HOST:-}" ]]; then
  echo "install-docker: DOCKER_HOST=$DOCKER_HOST names an engine that does not answer" >&2
  exit 8
else
  echo "install-docker: starting dockerd (log: $DOCKERD_LOG)"
  mkdir -p "$(dirname "$DOCKERD_LOG")"
  nohup dockerd >>"$DOCKERD_LOG" 2>&1 &
  echo "$!" >/var/run/buildkit-dockerd.pid
  for _ in $(seq "$WAIT_SECONDS"); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "install-docker: dockerd did not answer within ${WAIT_SECONDS}s; last lines of $DOCKERD_LOG:" >&2
    tail -n 20 "$DOCKERD_LOG" >&2
    exit 8
  fi
  echo "install-docker: engine up ($(docker info --format '{{.ServerVersion}}'))"
fi

if have buildkit; then buildkit=(buildkit); else buildkit=(python3 -m buildkit); fi
for tag in $BASE_IMAGES; do
  if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "install-docker: $tag present"
  else
    start=$SECONDS
    "${buildkit[@]}" image seed "$tag"
    echo "install-docker: seeded $tag in $((SECONDS - start))s"
  fi
done
