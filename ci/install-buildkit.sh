#!/usr/bin/env bash
# install-buildkit.sh SOURCE: install rocm-buildkit from SOURCE, a checkout of this repository at the ref
# the Action (action.yml: its own ${{ github.action_path }}) or the reusable workflow
# (.github/workflows/buildkit.yml: this repository checked out at the workflow's own commit) runs from,
# never from the caller's checkout. It goes into a venv of its own under $RUNNER_TEMP, whose bin is put
# on $GITHUB_PATH for the job's next steps (the runner's Python stays as it was). Run again for the
# same SOURCE in one job (the workflow, then the Action), it installs nothing.
set -euo pipefail
source_dir=$(cd "${1:?usage: install-buildkit.sh SOURCE}" && pwd -P)
venv="${RUNNER_TEMP:?}/rocm-buildkit"
stamp="$venv/.installed-from"
if [ ! -x "$venv/bin/buildkit" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$source_dir" ]; then
  python3 -m venv --clear "$venv"
  # --no-compile: byte-compiling every dependency up front is most of the install's time (29 s -> 11 s
  # measured here); Python compiles the modules a command imports when it first imports them
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile "$source_dir"
  printf '%s\n' "$source_dir" > "$stamp"
fi
echo "$venv/bin" >> "${GITHUB_PATH:?}"
"$venv/bin/buildkit" --version
