"""The ``torch-pin`` rule: with a torch pin X.Y, METADATA requires a torch of the X.Y series only, for
every Python the wheel serves (an extension compiled against torch X.Y loads only there: another
minor gives ``undefined symbol: _ZN3c10...``)."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.specifiers import Specifier, SpecifierSet

TORCH_PIN = Rule(
    "torch-pin",
    ("error",),
    checks=(
        "With a torch pin X.Y: METADATA has a valid `Requires-Dist` on torch, it admits an X.Y "
        "release and nothing outside the X.Y series (lower bound at least `X.Y.dev0`, upper below"
        " `X.(Y+1).dev0`), and its marker is true for every Python the wheel serves; every "
        "Requires-Dist line must parse. With a stable-ABI torch range from F (`--torch-stable F`): it "
        "admits F.0 and nothing below `F.dev0`, and has no upper bound unless the recipe gives one "
        "(`below: B`: then none above B)."
    ),
    prevents=(
        "pip installing another torch minor than the one the extension was compiled against: "
        "ImportError `undefined symbol: _ZN3c10...` or a crash from the changed C++ ABI."
    ),
)

RULES = (TORCH_PIN,)


def check(facts: Facts) -> Iterator[Finding]:
    """The torch pin against the wheel's ``Requires-Dist``, judged for the Pythons it serves."""
    config, report = facts.config, facts.report
    pin = config.torch or config.torch_stable
    if pin is None:
        return
    from packaging.requirements import InvalidRequirement, Requirement  # only with a torch pin

    python = wheel_pythons(report.filename)
    torch_reqs = []
    for line in report.metadata_requires:
        try:
            req = Requirement(line)
        except InvalidRequirement as exc:
            yield TORCH_PIN.error(f"METADATA Requires-Dist {line!r} is invalid: {exc}")
            continue
        if canonicalize_name(req.name) == "torch":
            torch_reqs.append(req)
    wanted = (
        f"torch=={pin}.*"
        if config.torch
        else f"torch>={pin}" + (f",<{config.torch_below}" if config.torch_below else "")
    )
    if not torch_reqs:
        yield TORCH_PIN.error(
            f"torch {pin} is {'pinned' if config.torch else 'the lowest served'} but METADATA has no "
            f"Requires-Dist on torch (expected e.g. {wanted})",
            library="torch",
        )
        return
    for req in torch_reqs:
        if config.torch_stable is not None:
            problem = torch_range_problem(req, pin, config.torch_below, python=python, machine=facts.arch)
            if problem:
                yield TORCH_PIN.error(f"{problem}; require {wanted}", library="torch", symbol=str(req))
            continue
        problem = torch_pin_problem(req, pin, python=python, machine=facts.arch)
        if problem:
            yield TORCH_PIN.error(
                f"{problem}; require torch=={config.torch}.* (or >={config.torch},<next minor)",
                library="torch",
                symbol=str(req),
            )


def _floor(release: Sequence[int], epoch: int = 0) -> Version:
    """The lowest version of a release series: ``(2, 10)`` -> ``2.10.dev0`` (below 2.10.0rc1, 2.10.0)."""
    text = ".".join(str(p) for p in release) + ".dev0"
    return Version(f"{epoch}!{text}" if epoch else text)


def _bump(release: Sequence[int]) -> tuple[int, ...]:
    return (*release[:-1], release[-1] + 1)


def _clause_bounds(spec: Specifier) -> tuple[Version | None, tuple[Version, bool] | None]:
    """The smallest interval holding every version one clause admits (PEP 440 semantics):
    ``!=`` only removes versions, so it bounds nothing; ``<V`` excludes V's pre-releases."""
    op, text = spec.operator, spec.version
    try:
        if op == "!=":
            return None, None
        if op == "==" and text.endswith(".*"):
            prefix = Version(text[:-2])
            return _floor(prefix.release, prefix.epoch), (_floor(_bump(prefix.release), prefix.epoch), False)
        version = Version(text)
    except InvalidVersion:  # "===" with an arbitrary string: no bound we can reason about
        return None, None
    if op == "~=":  # ~=2.10.1 is >=2.10.1, ==2.10.*
        stem = version.release[:-1]
        return version, (_floor(_bump(stem), version.epoch), False)
    if op in ("==", "==="):
        return version, (version, True)
    if op in (">=", ">"):
        return version, None
    if op == "<=":
        return None, (version, True)
    # "<"
    plain = not (version.is_prerelease or version.is_postrelease)
    return None, ((_floor(version.release, version.epoch) if plain else version), False)


def _python_candidates(marker_text: str, python: SpecifierSet) -> list[tuple[str, str]]:
    """Every distinct case a marker can tell apart among the Pythons ``python`` admits:
    ``(python_version, python_full_version)`` at the version literals of the marker, their
    neighbours and the ends of each minor series (markers compare with those literals only)."""
    literals = [Version(v) for v in re.findall(r"""['"](\d+(?:\.\d+){1,2})['"]""", marker_text)]
    top = max([v.minor for v in literals if v.major == 3] + [14]) + 1
    out = []
    for minor in range(top + 1):
        patches = {0, 99}
        for v in literals:
            if v.release[:2] == (3, minor) and len(v.release) > 2:
                patches |= {max(v.micro - 1, 0), v.micro, v.micro + 1}
        for patch in sorted(patches):
            full = f"3.{minor}.{patch}"
            if python.contains(full, prereleases=True):
                out.append((f"3.{minor}", full))
    return out


def _marker_problem(requirement: Requirement, python: SpecifierSet, machine: str | None) -> str | None:
    """A marker that is false for some Python the wheel serves (or without extras) leaves torch
    unrequired there: the extension would then load against whatever torch is installed."""
    if requirement.marker is None:
        return None
    base = {"extra": "", "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
    if machine is not None:
        base["platform_machine"] = machine
    for short, full in _python_candidates(str(requirement.marker), python):
        env = {**base, "python_version": short, "python_full_version": full}
        if not requirement.marker.evaluate(env):
            where = f"Python {full}" + (" (no extra)" if "extra" in str(requirement.marker) else "")
            return (
                f"{requirement} does not require torch on {where}: its marker ({requirement.marker}) is "
                "false there, so the wheel could load against any torch"
            )
    return None


def torch_pin_problem(
    requirement: Requirement,
    pin: str,
    *,
    python: SpecifierSet | str | None = None,
    machine: str | None = None,
) -> str | None:
    """Why ``requirement`` (on torch) does not pin ``pin`` (``"2.10"``); ``None`` if it does.

    It must admit a 2.10.x release and nothing outside the 2.10 series, decided from the specifier
    set's structure: the tightest lower bound (over every clause) must be at least ``2.10.dev0`` and
    the tightest upper bound below ``2.11.dev0`` (``==2.10.*``, ``~=2.10.N``, ``<2.11``, ``<=2.10.N``).
    Admitting a 2.10.x release is checked at 2.10.0 up to one past the highest 2.10 patch the clauses
    name (between those the clauses cannot change their answer). ``python`` (the Pythons the wheel
    serves, e.g. ``==3.12.*``; ``""``: any Python; None: the running one's minor series) and
    ``machine``: a marker false for one of them is a problem too (:func:`check` passes the wheel's
    own, :func:`wheel_pythons`).
    """
    from packaging.specifiers import SpecifierSet  # the torch rules only: imported when they run

    major, minor = (int(p) for p in pin.split("."))
    spec: SpecifierSet = requirement.specifier
    if python is None:
        python = f"=={sys.version_info.major}.{sys.version_info.minor}.*"
    python_set = python if isinstance(python, SpecifierSet) else SpecifierSet(python)
    literals = []
    for clause in spec:
        with contextlib.suppress(InvalidVersion):
            literals.append(Version(clause.version.removesuffix(".*")))
    last = max([v.micro for v in literals if v.release[:2] == (major, minor)] + [0])
    finals = [Version(f"{major}.{minor}.{p}") for p in range(last + 2)]
    extra = [v for v in literals if v.release[:2] == (major, minor)]
    if not any(spec.contains(v, prereleases=True) for v in [*finals, *extra]):
        return f"{requirement} does not admit any torch {pin} release"
    lows: list[tuple[Version, str]] = []
    highs: list[tuple[tuple[Version, bool], str]] = []
    for clause in spec:
        low, high = _clause_bounds(clause)
        if low is not None:
            lows.append((low, str(clause)))
        if high is not None:
            highs.append((high, str(clause)))
    floor, ceiling = _floor((major, minor)), _floor((major, minor + 1))
    tightest_low = max(lows, default=None)
    if tightest_low is None or tightest_low[0] < floor:
        below = "any older torch" if tightest_low is None else f"torch below {pin} ({tightest_low[1]})"
        return f"{requirement} also admits {below}, built against a different ABI than {pin}"
    tightest_high = min(highs, default=None)
    if tightest_high is None:
        return f"{requirement} also admits any newer torch, built against a different ABI than {pin}"
    (top, inclusive), clause_text = tightest_high
    if top >= ceiling if inclusive else top > ceiling:
        return (
            f"{requirement} also admits torch {major}.{minor + 1} ({clause_text} is its tightest upper "
            f"bound), built against a different ABI than {pin}"
        )
    return _marker_problem(requirement, python_set, machine)


def torch_range_problem(
    requirement: Requirement,
    lowest: str,
    below: str | None,
    *,
    python: SpecifierSet | str = "",
    machine: str | None = None,
) -> str | None:
    """Why ``requirement`` (on torch) is not the range of a stable-ABI wheel serving torch from
    ``lowest`` (``"2.10"``) on, below ``below`` if given: it must admit ``lowest``.0, nothing below
    ``lowest.dev0`` (an older torch lacks shim functions the wheel may need), no upper bound without
    ``below`` (the claim is every later torch) and none above ``below`` with it; ``None`` if it is."""
    from packaging.specifiers import SpecifierSet  # the torch rules only: imported when they run

    spec: SpecifierSet = requirement.specifier
    first = Version(f"{lowest}.0")
    if not spec.contains(first, prereleases=True):
        return f"{requirement} does not admit torch {first}, the lowest torch the wheel serves"
    lows = [(low, str(c)) for c in spec for low in [_clause_bounds(c)[0]] if low is not None]
    highs = [(high, str(c)) for c in spec for high in [_clause_bounds(c)[1]] if high is not None]
    floor = _floor(first.release[:2])
    tightest_low = max(lows, default=None)
    if tightest_low is None or tightest_low[0] < floor:
        older = "any older torch" if tightest_low is None else f"torch below {lowest} ({tightest_low[1]})"
        return f"{requirement} also admits {older}, which may lack the shim functions the wheel needs"
    tightest_high = min(highs, default=None)
    if below is None and tightest_high is not None:
        return (
            f"{requirement} bounds torch from above ({tightest_high[1]}), but the recipe's stable-ABI range "
            f"has no upper bound (torch>={lowest}; give torch.below to want one)"
        )
    if below is not None:
        limit = Version(below)
        (top, inclusive) = tightest_high[0] if tightest_high is not None else (None, False)
        if top is None or top > limit or (top == limit and inclusive):
            return f"{requirement} admits torch {below} or later, above the recipe's bound torch<{below}"
    python_set = python if isinstance(python, SpecifierSet) else SpecifierSet(python)
    return _marker_problem(requirement, python_set, machine)


def wheel_pythons(filename: str) -> SpecifierSet:
    """The Pythons a wheel serves, from its tags: ``cp312-cp312`` -> ``==3.12.*``, ``cp39-abi3`` ->
    ``>=3.9``; anything else (``py3``, an invalid name): any Python (empty set)."""
    from packaging.specifiers import SpecifierSet  # the torch rules only: imported when they run

    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return SpecifierSet()
    exact: set[int] = set()
    floors: set[int] = set()
    for tag in tags:
        m = re.fullmatch(r"cp3(\d+)", tag.interpreter)
        if m is None:
            return SpecifierSet()
        (floors if tag.abi == "abi3" else exact).add(int(m.group(1)))
    if len(exact) == 1 and not floors:
        return SpecifierSet(f"==3.{exact.pop()}.*")
    if floors and not exact:
        return SpecifierSet(f">=3.{min(floors)}")
    return SpecifierSet()
