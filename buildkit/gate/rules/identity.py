"""The ``job-identity`` rule: a job's wheel is that job's (distribution name, version, Python tag and
platform tag, as the plan gives them)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from buildkit.gate.config import JobIdentity
from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding, Severity
from buildkit.gate.pyabi import module_name_problem
from buildkit.gate.rule import Rule
from buildkit.gate.rules import ceilings
from buildkit.policy import parse_platform_tag

JOB_IDENTITY = Rule(
    "job-identity",
    ("error",),
    checks=(
        "Only with a job (`build`, or `check --recipe --job`): the file name's distribution name "
        "is the recipe's `name`, the version is the plan's, every tag serves the job's CPython "
        "(`cp312-cp312`, or an `abi3` tag that Python loads), and the job's platform tag is "
        "present with only same-architecture manylinux tags beside it. A job of a recipe's "
        "`wheel: py3-none|abi3` accepts exactly that tag (`py3-none`, `cp312-abi3`) and checks what "
        "it claims: a `py3-none` wheel has no CPython extension module (no `PyInit_*` export, no "
        "`*.cpython-*.so`/`*.abi3.so`), an `abi3` wheel no `*.cpython-*.so` and no symbol outside "
        "the stable ABI of its floor (abi3audit's audit of each host ELF's dynamic symbols)."
    ),
    prevents=(
        "Publishing a wheel under the wrong project or version, or one pip refuses on the job's "
        'Python/platform ("is not a supported wheel on this platform"), so users get another '
        "wheel or the sdist; or a wheel tagged for every Python that fails to import on all but "
        "one (a per-Python extension module under a py3-none or abi3 tag)."
    ),
    never_waived=(
        "a wheel that is not the job's would be published under the wrong name, version or tags: "
        "fix the recipe's name or version, or the build"
    ),
)

RULES = (JOB_IDENTITY,)


def check(facts: Facts) -> Iterator[Finding]:
    """The wheel is the job's: its file name's version, Python tag and platform tag are the ones the
    plan gives the job, its distribution name the recipe's ``name`` (the schema defines it as the
    wheel's distribution name); each is an error naming expected and found."""
    identity = facts.config.identity
    if identity is None:
        return
    try:
        name, version, _build, tags = parse_wheel_filename(facts.report.filename)
    except InvalidWheelFilename:
        return  # the wheel-name rule says so
    job = f"job {identity.job}"

    def mismatch(
        what: str, expected: str, found: str, hint: str = "", severity: Severity = "error"
    ) -> Finding:
        message = f"{what}: expected {expected}, found {found}" + (f"; {hint}" if hint else "")
        return JOB_IDENTITY.finding(severity, message)

    if identity.name is not None and canonicalize_name(identity.name) != name:
        yield mismatch(
            "distribution name",
            f"{canonicalize_name(identity.name)} (the recipe's name)",
            name,
            "set the recipe's name to the project's distribution name",
        )
    expected_version = _normal_version(identity.version)
    if str(version) != expected_version:
        yield mismatch(
            "version",
            f"{expected_version} (the plan's for {job})",
            str(version),
            "make the build read BUILDKIT_VERSION or SETUPTOOLS_SCM_PRETEND_VERSION",
        )
    if identity.wheel_tag is not None:
        yield from _claim(facts, identity, tags)
    elif not _serves_python(tags, identity.python):
        pairs = ", ".join(sorted({f"{t.interpreter}-{t.abi}" for t in tags}))
        python = identity.python.removesuffix("t")
        yield mismatch("python tag", f"{python}-{identity.python} ({job}'s Python)", pairs)
    platforms = sorted({t.platform for t in tags})
    if not _has_platform(platforms, identity.platform_tag):
        repaired = all(parse_platform_tag(p) is not None for p in platforms)
        yield mismatch(
            "platform tag",
            f"{identity.platform_tag} ({job}'s policy)",
            ", ".join(platforms),
            _repair_hint(ceilings.has_errors(facts)) if repaired else "",
        )


def _claim(facts: Facts, identity: JobIdentity, tags: Iterable[Any]) -> Iterator[Finding]:
    """A Python-independent job's wheel: exactly the recipe's tag, and nothing in it that contradicts
    the tag (each error names the member)."""
    claim = identity.wheel_tag
    assert claim is not None
    pairs = sorted({f"{t.interpreter}-{t.abi}" for t in tags})
    if pairs != [claim]:
        py_api = "py3" if claim == "py3-none" else claim.split("-")[0]
        yield JOB_IDENTITY.error(
            f"python tag: expected {claim} (job {identity.job}'s wheel, the recipe's wheel:), found "
            f"{', '.join(pairs)}; make the build tag it {claim} (scikit-build-core: wheel.py-api = "
            f'"{py_api}"; `buildkit build` retags any backend\'s wheel whose members hold the claim, '
            "as `wheel tags` does), or remove wheel: from the recipe to build one wheel per Python",
            symbol=", ".join(pairs),
        )
    for member in facts.report.members:
        problem = module_name_problem(member, claim)
        if problem is not None:
            yield JOB_IDENTITY.error(
                f"{member}: {problem} in a {claim} wheel, which claims to serve every planned Python",
                file=member,
            )
    result = facts.python_abi
    if result is None:
        return
    for m in result.members:
        if claim == "py3-none" and m.init:
            yield JOB_IDENTITY.error(
                f"{m.member} exports {', '.join(m.init)}: a CPython extension module in a py3-none wheel "
                "(built against one CPython's ABI); load native code with ctypes/cffi, or declare "
                'wheel: {abi: abi3, from: "3.N"} for a limited-API module',
                file=m.member,
                symbol=m.init[0],
            )
        if m.non_abi3:
            shown = ", ".join(m.non_abi3[:5]) + (
                f" and {len(m.non_abi3) - 5} more" if len(m.non_abi3) > 5 else ""
            )
            yield JOB_IDENTITY.error(
                f"{m.member} uses {shown}, outside the stable ABI ({result.auditor}): not a {claim} "
                "module; build with Py_LIMITED_API, or use the limited API's functions",
                file=m.member,
                symbol=m.non_abi3[0],
            )
        for name, added in m.future:
            yield JOB_IDENTITY.error(
                f"{m.member} uses {name}, in the stable ABI from CPython {added} only: above the "
                f"{claim} floor ({result.auditor}); raise wheel.from to {added}, or avoid {name}",
                file=m.member,
                symbol=name,
            )


def _repair_hint(ceiling_errors: bool) -> str:
    """Why a job's wheel carries another manylinux tag than the job's policy (build repairs to the
    best policy auditwheel allows when it refuses the job's)."""
    if ceiling_errors:
        return (
            "auditwheel tags a wheel it cannot repair to the policy for what its symbols allow: the "
            "ceiling errors name the symbol versions above the policy"
        )
    return (
        "no symbol version or library this gate reads is above the job's policy: see the blacklist, "
        "pyfpe and x86-isa findings if any, else the wheel was repaired with another --plat"
    )


def _normal_version(text: str) -> str:
    try:
        return str(Version(text))
    except InvalidVersion:
        return text


def _serves_python(tags: Iterable[Any], cp_tag: str) -> bool:
    """Every tag is the job's CPython (``cp312-cp312``; ``cp313-cp313t`` for ``cp313t``), or a
    stable-ABI tag (``cp39-abi3``) the job's Python satisfies."""
    m = re.fullmatch(r"cp3(\d+)(t?)", cp_tag)
    if m is None:
        return all(t.interpreter == cp_tag for t in tags)
    minor, threaded = int(m.group(1)), bool(m.group(2))
    for t in tags:
        if t.interpreter == f"cp3{minor}" and t.abi == cp_tag:
            continue
        floor = re.fullmatch(r"cp3(\d+)", t.interpreter)
        if t.abi == "abi3" and floor is not None and not threaded and int(floor.group(1)) <= minor:
            continue
        return False
    return True


def _has_platform(platforms: Sequence[str], expected: str) -> bool:
    """``expected`` is among the file name's platform tags and every other one is a manylinux tag
    of the same architecture (auditwheel adds the more compatible policies the wheel also meets;
    the platform-tag rule checks each against the symbols)."""
    want = parse_platform_tag(expected)
    if want is None:
        return list(platforms) == [expected]
    parsed = [parse_platform_tag(p) for p in platforms]
    return want in parsed and all(p is not None and p[1] == want[1] for p in parsed)
