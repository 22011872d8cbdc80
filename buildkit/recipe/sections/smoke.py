"""The recipe's ``smoke:``: tests run on the built wheel in runtime images (``buildkit smoke``), each
named once; ``packages`` extend the runtime image of a profile (``image: rocm-buildkit/<profile>``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from buildkit.recipe.section import Context, Section
from buildkit.recipe.sections.image import check_smoke_packages


@dataclass(frozen=True)
class SmokeTest:
    name: str
    image: str
    imports: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    gpu: bool = False  # needs an AMD GPU passed through (skipped with the reason without one)
    #: extra system packages over the runtime image of a profile (``image: rocm-buildkit/<profile>``)
    packages: tuple[str, ...] = ()


def _parse_smoke(ctx: Context) -> tuple[SmokeTest, ...]:
    smoke = tuple(
        SmokeTest(
            name=s["name"],
            image=s["image"],
            imports=tuple(s.get("imports", ())),
            commands=tuple(s.get("commands", ())),
            labels=tuple(s.get("labels", ())),
            gpu=bool(s.get("gpu", False)),
            packages=tuple(s.get("packages", ())),
        )
        for s in ctx.data.get("smoke", ())
    )
    for i, test in enumerate(smoke):
        if test.packages:
            ctx.attempt("smoke", (), partial(check_smoke_packages, test.image, ("smoke", i), ctx.err))
    names = [s.name for s in smoke]
    for i, n in enumerate(names):
        if n in names[:i]:
            ctx.report(ctx.err(f"smoke test name {n!r} is used twice", ("smoke", i, "name")))
    return smoke


SECTION = Section("smoke", ("smoke",), _parse_smoke, "smoke")
