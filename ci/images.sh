#!/usr/bin/env bash
# images.sh save|load|push|pull ...: hand the images `buildkit image prepare` made in one job of
# .github/workflows/buildkit.yml to the build and smoke jobs, so that each image is built once per
# workflow run; `buildkit build`/`smoke` reuse an image whose content tag the engine has.
#   images.sh key REFS_FILE          the cache key: sha256 of the images' ids (content-addressed)
#   images.sh save REFS_FILE DIR     docker save into DIR/images.tar (the runner cache carries DIR)
#   images.sh load REFS_FILE DIR     docker load it, unless the engine has every image already
#   images.sh push REFS_FILE REGISTRY  tag and push each image as REGISTRY/<ref>
#   images.sh pull REFS_FILE REGISTRY  pull each and tag it back as <ref>
set -euo pipefail
command=${1:?usage: images.sh key|save|load|push|pull REFS_FILE [DIR|REGISTRY]}
refs_file=${2:?usage: images.sh $command REFS_FILE [DIR|REGISTRY]}
mapfile -t refs < <(grep -v '^[[:space:]]*$' "$refs_file")
if [ "${#refs[@]}" = 0 ]; then
  echo "images.sh: $refs_file lists no image" >&2
  exit 2
fi
case "$command" in
  key)
    printf 'buildkit-images-%s\n' "$(docker image inspect --format '{{.Id}}' "${refs[@]}" | sha256sum | cut -c1-32)"
    ;;
  save)
    mkdir -p "${3:?DIR}"
    docker save -o "$3/images.tar" "${refs[@]}"
    cp "$refs_file" "$3/refs.txt"
    ;;
  load)
    if docker image inspect "${refs[@]}" >/dev/null 2>&1; then
      echo "the engine has every image already: nothing to load"
    else
      docker load -i "${3:?DIR}/images.tar"
    fi
    ;;
  push | pull)
    registry=${3:?REGISTRY}
    for ref in "${refs[@]}"; do
      if [ "$command" = push ]; then
        docker tag "$ref" "$registry/$ref"
        docker push "$registry/$ref"
      else
        docker pull "$registry/$ref"
        docker tag "$registry/$ref" "$ref"
      fi
    done
    ;;
  *)
    echo "images.sh: unknown command $command" >&2
    exit 2
    ;;
esac
