"""The ``core-metadata`` rule: ``.dist-info/METADATA`` as pip, uv and PyPI read it.

The header section the inspection kept (:class:`~buildkit.inspect.models.CoreMetadata`) is validated
with ``packaging``'s rules, as PyPI's upload validation and ``twine check`` run them, and read line by line
the way pip's email parser splits it: a lone CR, or a CR LF among LF line ends, is a line end to pip,
so ``Summary: hi\\r\\nRequires-Dist: evil`` is two fields there and one to a reader splitting on LF.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule

CORE_METADATA = Rule(
    "core-metadata",
    ("error",),
    checks=(
        "`.dist-info/METADATA` exists and, parsed with `packaging` as PyPI's upload validation "
        "and `twine check` do: `Metadata-Version`, `Name` and `Version` are present, once, and "
        "`Name` and `Version` equal the file name's after normalisation (so, with a job, the "
        "recipe's name and the plan's version); every single-use field appears once and is UTF-8; "
        "`Metadata-Version` is one of the specification's; `Requires-Python`, `Requires-Dist` and "
        "`Provides-Extra` parse, and every extra a Requires-Dist marker names is a Provides-Extra; "
        "every line of the header section ends like the first (no lone CR, "
        "no CR LF among LF: pip treats each as a line end, so a field holding one hides a second "
        "field)."
    ),
    prevents=(
        "pip refusing the wheel after it was published (`has inconsistent version: expected '1.0', "
        "but metadata has '9.9'`, a wheel named for another project), PyPI refusing the upload "
        "(an invalid `Requires-Python`), or a dependency hidden in another field "
        "(`Summary: hi\\r\\nRequires-Dist: injected-evil`) that pip installs and a reviewer "
        "reading the summary does not see; or `pip install 'pkg[gfx942]'` only warning that the "
        "extra is not provided and installing none of its requirements."
    ),
    never_waived=(
        "pip, uv or PyPI read this metadata otherwise than the gate does, or refuse it: fix the "
        "build's metadata"
    ),
)

RULES = (CORE_METADATA,)

# the core metadata specification's fields that may appear at most once (lower-cased)
SINGLE_USE = frozenset(
    {
        "metadata-version",
        "name",
        "version",
        "summary",
        "description",
        "description-content-type",
        "keywords",
        "home-page",
        "download-url",
        "author",
        "author-email",
        "maintainer",
        "maintainer-email",
        "license",
        "license-expression",
        "requires-python",
    }
)
_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")
#: the core metadata specification's versions (2.0 never was one, but old bdist_wheel wrote it and
#: pip and PyPI take it)
METADATA_VERSIONS = frozenset({"1.0", "1.1", "1.2", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5"})
#: a valid distribution or extra name (PEP 508, the core metadata specification)
_EXTRA_MARKER = re.compile(r"""\bextra\s*==\s*['"]([^'"]+)['"]""")
_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)
_END_NAMES = {"\r\n": "CR LF", "\n": "LF", "\r": "a lone CR"}


def check(facts: Facts) -> Iterator[Finding]:
    """Each problem of the wheel's METADATA, an error naming the field and what reads it otherwise."""
    report = facts.report
    core = report.core_metadata
    expected = f"{report.dist_info_dir or '.dist-info'}/METADATA"
    if expected not in report.members:
        yield CORE_METADATA.error(f"{expected} is missing: pip refuses the wheel")
    if core is None:
        return
    member = core.member
    yield from _line_ends(core.headers, member)
    counts = Counter(_field_names(core.headers))
    for field, n in sorted(counts.items()):
        if n > 1 and field in SINGLE_USE:
            yield CORE_METADATA.error(
                f"{member}: {_title(field)} appears {n} times; it is a single-use field "
                "(pip reads the first; packaging and PyPI's upload validation refuse it)",
                file=member,
                symbol=_title(field),
            )
    yield from _validated(_fields(core.headers), member, counts)
    yield from _identity(facts, core.headers, member)


def _line_ends(headers: str, member: str) -> Iterator[Finding]:
    """A header line ended otherwise than the first: the field before it holds a line break that pip
    reads as the end of the field."""
    first: str | None = None
    previous = ""
    for number, match in enumerate(_LINE.finditer(headers), start=1):
        text, end = match.group(1), match.group(2)
        if not end:
            break
        field = text if text[:1] in " \t" or ":" not in text else text.partition(":")[0]
        if first is None:
            first = end
        if end == "\r" or end != first:
            shown, usual = _END_NAMES[end], _END_NAMES[first]
            following = headers[match.end() :].splitlines()[:1]
            after = f" ({following[0][:60]!r} becomes a field of its own to pip)" if following else ""
            yield CORE_METADATA.error(
                f"{member}: line {number} ({field or previous!s} field) ends with {shown}, the first "
                f"line with {usual}: "
                f"a line break inside a field{after}",
                file=member,
                symbol=field or previous,
            )
        previous = field or previous


def _field_names(headers: str) -> Iterator[str]:
    for line in re.split(r"\r\n|\r|\n", headers):
        if line and line[0] not in " \t" and ":" in line:
            yield line.partition(":")[0].strip().lower()


def _validated(fields: list[tuple[str, str]], member: str, counts: Counter[str]) -> Iterator[Finding]:
    """The fields as PyPI's upload validation reads them, each problem one finding (a required field
    that is only missing because it appears twice is said once, above). Parsed with ``packaging``'s
    version, specifier, requirement and name rules (not ``packaging.metadata``, whose email parser
    and dataclasses would cost every ``check`` ~40 ms of start-up: tests/unit/test_check_startup.py);
    ``packaging.requirements`` loads only for a wheel that declares a Requires-Dist."""
    first: dict[str, str] = {}
    for key, value in fields:
        first.setdefault(key, value)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            yield _invalid(member, key, f"{_title(key)} is not valid UTF-8: {value[:60]!r}")
    for key in ("metadata-version", "name", "version"):
        if key not in first and counts.get(key, 0) == 0:
            yield _invalid(member, key, f"{key!r} is a required field")
    checks: dict[str, Callable[[str], bool]] = {
        "metadata-version": METADATA_VERSIONS.__contains__,
        "name": lambda v: _NAME.match(v) is not None,
        "version": _parses(Version, InvalidVersion),
        "requires-python": _parses(SpecifierSet, InvalidSpecifier),
        "provides-extra": lambda v: _NAME.match(v) is not None,
    }
    for key, value in fields:
        if key == "requires-dist":
            from packaging.requirements import InvalidRequirement, Requirement  # only when declared

            ok = _parses(Requirement, InvalidRequirement)(value)
        elif key in checks:
            ok = checks[key](value)
        else:
            continue
        if not ok:
            what = (
                "is not a valid metadata version" if key == "metadata-version" else f"is invalid for {key!r}"
            )
            yield _invalid(member, key, f"{value!r} {what}")
    yield from _undeclared_extras(fields, member)


def _undeclared_extras(fields: list[tuple[str, str]], member: str) -> Iterator[Finding]:
    """Each extra a Requires-Dist marker names (``extra == "gfx942"``) is declared by a
    Provides-Extra: otherwise ``pip install 'pkg[gfx942]'`` only warns that the package does not
    provide it and installs none of its requirements (ROCm's device packages were shipped so)."""
    declared = {canonicalize_name(v) for k, v in fields if k == "provides-extra"}
    for key, value in fields:
        if key != "requires-dist" or "extra" not in value:
            continue
        for extra in dict.fromkeys(_EXTRA_MARKER.findall(value.partition(";")[2])):
            if canonicalize_name(extra) not in declared:
                yield _invalid(
                    member,
                    key,
                    f"Requires-Dist {value!r} names the extra {extra!r}, which no Provides-Extra declares: "
                    f"pip install 'name[{extra}]' only warns and installs none of it; declare it",
                )


def _parses(kind: Callable[[str], object], error: type[Exception]) -> Callable[[str], bool]:
    def ok(value: str) -> bool:
        try:
            kind(value)
        except error:
            return False
        return True

    return ok


def _invalid(member: str, key: str, message: str) -> Finding:
    return CORE_METADATA.error(f"{member}: {message}", file=member, symbol=_title(key))


def _fields(headers: str) -> list[tuple[str, str]]:
    """The header fields (lower-cased name, value), a folded line joined to its field's value."""
    out: list[tuple[str, str]] = []
    for line in re.split(r"\r\n|\r|\n", headers):
        if line[:1] in (" ", "\t") and out:
            out[-1] = (out[-1][0], f"{out[-1][1]} {line.strip()}")
        elif ":" in line:
            key, _, value = line.partition(":")
            out.append((key.strip().lower(), value.strip()))
    return out


def _identity(facts: Facts, headers: str, member: str) -> Iterator[Finding]:
    """``Name`` and ``Version`` equal the file name's, as pip compares them."""
    try:
        name, version, _build, _tags = parse_wheel_filename(facts.report.filename)
    except InvalidWheelFilename:
        return  # the wheel-name rule says so
    fields: dict[str, str] = {}
    for line in re.split(r"\r\n|\r|\n", headers):
        key, sep, value = line.partition(":")
        if sep and line[:1] not in " \t":
            fields.setdefault(key.strip().lower(), value.strip())
    meta_name, meta_version = fields.get("name"), fields.get("version")
    if meta_name is not None and canonicalize_name(meta_name) != name:
        yield CORE_METADATA.error(
            f"{member}: Name is {meta_name!r}, the file name's {name!r}: pip refuses the wheel "
            "(or installs it under another project); build it from the right project or rename it",
            file=member,
            symbol="Name",
        )
    if meta_version is not None:
        try:
            same = Version(meta_version) == version
        except InvalidVersion:
            return  # packaging's validation says so
        if not same:
            yield CORE_METADATA.error(
                f"{member}: Version is {meta_version!r}, the file name's {str(version)!r}: pip refuses "
                f"it (has inconsistent version: expected '{version}', but metadata has "
                f"'{meta_version}'); make the build and the file name agree",
                file=member,
                symbol="Version",
            )


def _title(field: str) -> str:
    return "-".join(part.capitalize() for part in field.replace("_", "-").split("-"))
