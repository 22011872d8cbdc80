"""The recipe's ``python:``: the CPythons of the matrix ("3.12"), each in :func:`cibuildwheel_pythons`."""

from __future__ import annotations

import re
import sys
from functools import cache
from importlib import resources

from buildkit.recipe.schema import did_you_mean
from buildkit.recipe.section import Context, Section

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: cibuildwheel identifiers of the CPython builds for our platform: cp312-manylinux_x86_64 (not cp314t).
_CIBW_CPYTHON = re.compile(r"^cp(?P<major>[0-9])(?P<minor>[0-9]+)-manylinux_x86_64$")


@cache
def cibuildwheel_pythons() -> tuple[str, ...]:
    """CPython versions ("3.12") the installed cibuildwheel builds manylinux x86_64 wheels for, read
    from its ``resources/build-platforms.toml``: upgrading cibuildwheel is what allows a new Python.
    """
    text = (
        resources.files("cibuildwheel").joinpath("resources/build-platforms.toml").read_text(encoding="utf-8")
    )
    configs = tomllib.loads(text)["linux"]["python_configurations"]
    found = set()
    for config in configs:
        m = _CIBW_CPYTHON.match(str(config.get("identifier", "")))
        if m:
            found.add((int(m.group("major")), int(m.group("minor"))))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


def _parse_python(ctx: Context) -> tuple[str, ...]:
    """The recipe's Pythons; each one cibuildwheel cannot build is a problem of its own."""
    known = cibuildwheel_pythons()
    for i, python in enumerate(ctx.data["python"]):
        if python not in known:
            import cibuildwheel  # its version for the message only (start-up time: check never loads it)

            ctx.report(
                ctx.err(
                    f"python[{i}]: cibuildwheel {cibuildwheel.__version__} cannot build CPython {python} "
                    f"(it builds {', '.join(known)})",
                    ("python", i),
                    hint=did_you_mean(python, known),
                )
            )
    return tuple(ctx.data["python"])


SECTION = Section("python", ("python",), _parse_python, "python")
