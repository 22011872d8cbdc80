"""actions/checkout's stand-in: the repository from a local folder named by ACT_STANDIN_REPOS."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

repos = json.loads(os.environ["ACT_STANDIN_REPOS"])
repository, ref = os.environ["INPUT_REPOSITORY"], os.environ["INPUT_REF"]
key = f"{repository}@{ref}" if ref else repository
if key not in repos:
    sys.exit(f"checkout stand-in: {key!r} is not one of the local repositories: {sorted(repos)}")
source = Path(repos[key])
dest = Path(os.environ["GITHUB_WORKSPACE"], os.environ["INPUT_PATH"])
if dest.exists():
    shutil.rmtree(dest)
if os.environ["INPUT_FETCH_DEPTH"] == "0":
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(source), str(dest)], check=True)
else:
    listed = subprocess.run(
        ["git", "-C", str(source), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (source / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, dest / name, follow_symlinks=False)
print(f"checkout stand-in: {key} from {source} into {dest}")
