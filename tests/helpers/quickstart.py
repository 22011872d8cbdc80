"""rocm-buildkit as a new user gets it: built into a wheel from this tree and installed in a fresh virtual
environment (nothing of this checkout on its path), and the README's sections as printed. Shared by the
quick-start tests of the integration tier (init and plan) and of the docker tier (the whole quick start)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def readme_section(title: str, fence: str) -> str:
    """The first ``fence`` code block under the README's ``## title``."""
    text = readme()
    start = text.index(f"## {title}")
    body = text.index(f"```{fence}\n", start) + len(fence) + 4
    return text[body : text.index("```\n", body)]


def clean_env() -> dict[str, str]:
    """This process's environment without what would reach this checkout or choose archs for the user."""
    drop = ("PYTHONPATH", "PYTORCH_ROCM_ARCH", "GPU_ARCHS", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop}


def installed_venv(where: Path) -> Path:
    """A fresh venv in ``where`` with rocm-buildkit installed from the wheel this tree builds."""
    tree = where / "tree"  # a copy of what the wheel is made of: the build leaves build/ beside its input
    for name in ("buildkit", "docker"):
        shutil.copytree(ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    wheels = where / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(tree), "-w", str(wheels)],
        capture_output=True,
        text=True,
        check=False,
        env=clean_env(),
        cwd=where,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("rocm_buildkit-*.whl")
    env_dir = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300, env=clean_env())
    installed = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
        env=clean_env(),
        cwd=where,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr
    assert (env_dir / "bin" / "buildkit").is_file(), installed.stdout
    return env_dir


def venv_env(venv: Path) -> dict[str, str]:
    """The environment of a shell in which ``venv`` is activated."""
    env = clean_env()
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    env["VIRTUAL_ENV"] = str(venv)
    return env
