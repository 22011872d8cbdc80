"""What a wheel needs from torch, what a torch exports, and the judgement of the ``torch-abi`` rule.

What counts as *needed from torch* (conditions 1-5), *left to the other libraries*, *found*, and the
reasons of a missing symbol (``abi``, ``signature``, ``unlinked``, ``absent``) are defined in
docs/GATE-RULES.md ("The torch-abi rule"); the functions below cite the conditions by number.
"Found" follows ld.so, which searches ``M``'s dependencies only (``import torch`` makes none of its
libraries global). Without a torch (``diff``), condition 5 is the name test alone.

The torch's exports (:class:`TorchExports`) are read, and cached, by
:mod:`buildkit.compare.torch_exports`: the gate takes them as given and writes nothing.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from buildkit.gate.demangle import demangle
from buildkit.records import Key, json_shape

#: Itanium-mangled outermost scopes of torch's C++ API (``_ZN3c10``, ``_ZNK2at``, ``_ZTVN5torch``)
TORCH_SCOPES = ("3c10", "2at", "5torch", "6caffe2")
_MANGLED_SCOPE = re.compile(r"^_Z(?:T[VITSHW]|GV|Th\d*_|Tv\d+_\d+_)?N?[rVKRO]*(\d+)([A-Za-z_]\w*)")
_STD_TOKENS = frozenset(
    {"__cxx11", "basic_string", "char_traits", "allocator", "basic_ostream", "basic_istream", "cxx11"}
)
_ABI_SPELLINGS = (
    ("std::__cxx11::", "std::"),
    ("[abi:cxx11]", ""),
    ("std::basic_string<char,std::char_traits<char>,std::allocator<char>>", "std::string"),
    ("std::basic_ostream<char,std::char_traits<char>>", "std::ostream"),
    ("std::basic_istream<char,std::char_traits<char>>", "std::istream"),
    ("std::basic_iostream<char,std::char_traits<char>>", "std::iostream"),
)
MissingReason = Literal["abi", "signature", "unlinked", "absent"]


@functools.cache
def torch_globs() -> tuple[str, ...]:
    from buildkit.rocm import exclude_globs  # the library data: only when the rule runs

    return tuple(exclude_globs(["torch"]))


def is_torch_library(name: str, also: Iterable[str] = ()) -> bool:
    """Whether DT_NEEDED ``name`` is one of torch's libraries (the ``torch`` set's globs, or ``also``)."""
    return name in also or any(fnmatch.fnmatchcase(name, g) for g in torch_globs())


def torch_owned(name: str) -> bool:
    """Whether a symbol is torch's by its name (condition 5, docs/GATE-RULES.md)."""
    if name.startswith("THP"):
        return True
    m = _MANGLED_SCOPE.match(name)
    if m is None:
        return False
    scope = m.group(1) + m.group(2)[: int(m.group(1))]
    return scope in TORCH_SCOPES or m.group(2).startswith("THP")


def abi_neutral(demangled: str) -> str:
    """A demangled name with both C++ ABIs spelled alike (spaces dropped, ``std::__cxx11::`` and
    ``[abi:cxx11]`` removed, ``std::basic_string<char, ...>`` as ``std::string``)."""
    text = demangled.replace(" ", "")
    for long, short in _ABI_SPELLINGS:
        text = text.replace(long, short)
    return text


def qualified_name(demangled: str) -> str:
    """``void c10::foo<int>(int) const`` -> ``c10::foo<int>``: the name without return type and
    parameters."""
    depth = 0
    cut = len(demangled)
    for i, ch in enumerate(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and not demangled.startswith("operator()", max(0, i - 8)):
            cut = i
            break
    head = demangled[:cut]
    depth, start = 0, 0
    for i, ch in enumerate(head):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0 and not head[i + 1 : i + 9].startswith(("operator", "const")):
            start = i + 1
    return head[start:]


def _tokens(mangled: str) -> list[str]:
    """The ``<length><identifier>`` source names of an Itanium name, in order."""
    out = []
    i, n = 0, len(mangled)
    while i < n:
        if mangled[i].isdigit() and (i == 0 or not mangled[i - 1].isdigit()):
            j = i
            while j < n and mangled[j].isdigit():
                j += 1
            length = int(mangled[i:j])
            word = mangled[j : j + length]
            if length and len(word) == length and re.fullmatch(r"[A-Za-z_]\w*", word):
                out.append(word)
                i = j + length
                continue
            i = j
            continue
        i += 1
    return out


# --------------------------------------------------------------------------- a torch's exports
@dataclass(frozen=True)
class TorchLibrary:
    name: str  # the file name in torch/lib ("libtorch_cpu.so")
    soname: str | None
    needed: tuple[str, ...]
    exported: frozenset[str]


@json_shape(
    *("source", "kind", "version", "filename", "sha256"),
    *(Key("libraries", convert=len), Key("exports", convert=len), "cxx11_abi", "cached"),
)
@dataclass(frozen=True)
class TorchExports:
    """What a torch exports: its libraries with their DT_NEEDED and exported names. ``source`` is
    what was given (a path or an image), ``filename``/``sha256`` the torch wheel's (None for a folder
    or an image), ``version`` torch's (``2.13.0+cpu``)."""

    source: str
    kind: Literal["wheel", "folder", "image"]
    version: str | None
    libraries: tuple[TorchLibrary, ...]
    filename: str | None = None
    sha256: str | None = None
    cached: bool = False

    @property
    def label(self) -> str:
        """``torch 2.13.0+cpu (torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl)``."""
        what = self.filename or self.source
        return f"torch {self.version or '(version unknown)'} ({what})"

    def exporters(self, name: str) -> tuple[str, ...]:
        """The libraries exporting ``name`` (file names), in library order."""
        return tuple(lib.name for lib in self.libraries if name in lib.exported)

    @functools.cached_property
    def exports(self) -> frozenset[str]:
        """Every name some library exports."""
        return frozenset().union(*(lib.exported for lib in self.libraries))

    def names(self) -> set[str]:
        """Every library's file name and SONAME."""
        return {lib.name for lib in self.libraries} | {lib.soname for lib in self.libraries if lib.soname}

    def closure(self, direct: Iterable[str]) -> set[str]:
        """The torch libraries (file names) loaded for DT_NEEDED names ``direct``, with their own."""
        by_name = {lib.name: lib for lib in self.libraries}
        by_name.update({lib.soname: lib for lib in self.libraries if lib.soname})
        seen: set[str] = set()
        todo = [n for n in direct if n in by_name]
        while todo:
            lib = by_name[todo.pop()]
            if lib.name in seen:
                continue
            seen.add(lib.name)
            todo += [n for n in lib.needed if n in by_name]
        return seen

    @functools.cached_property
    def cxx11_abi(self) -> bool | None:
        """Whether the torch's C++ API uses ``_GLIBCXX_USE_CXX11_ABI=1`` (``std::__cxx11::``
        strings in its exports); None when it exports no C++ name at all."""
        names = self.exports
        if not any(n.startswith("_Z") for n in names):
            return None
        return any("St7__cxx11" in n or "B5cxx11" in n for n in names)


# --------------------------------------------------------------------------- what a wheel needs
@dataclass(frozen=True)
class Needed:
    name: str  # mangled
    member: str
    links: tuple[str, ...]  # the torch libraries the member DT_NEEDs


@dataclass(frozen=True)
class TorchNeeds:
    """Conditions 1-4 (docs/GATE-RULES.md), per member (5 needs a torch: :func:`judge`), as
    :func:`buildkit.judge.wheel.torch_needs` reads them from a wheel."""

    linking: tuple[str, ...] = ()  # members that DT_NEED a torch library
    symbols: tuple[Needed, ...] = ()

    def by_name(self) -> set[str]:
        """The needed names condition 5 keeps without a torch (torch's by name)."""
        return {s.name for s in self.symbols if torch_owned(s.name)}


# --------------------------------------------------------------------------- the judgement
@json_shape(
    Key("symbol", "symbol.name"),
    "demangled",
    Key("member", "symbol.member"),
    *("reason", "library", "detail"),
)
@dataclass(frozen=True)
class Missing:
    symbol: Needed
    demangled: str
    reason: MissingReason
    detail: str  # what the torch exports instead, or which library exports it
    library: str | None = None  # the torch library concerned (exporting the twin, or unlinked)


@json_shape(
    *("torch", "linking", Key("needed", convert=len), "found", "missing"),
    Key("left_to_other_libraries", "others", convert=lambda others: sorted({n.name for n in others})),
)
@dataclass(frozen=True)
class TorchAbiResult:
    """The ``torch-abi`` rule's judgement of one wheel against one torch."""

    torch: TorchExports
    linking: tuple[str, ...]
    needed: tuple[Needed, ...]  # needed from torch (conditions 1-5)
    found: int
    missing: tuple[Missing, ...]
    others: tuple[Needed, ...]  # left to the other libraries

    @property
    def abi_mismatch(self) -> bool:
        return any(m.reason == "abi" for m in self.missing)


@dataclass
class _Twins:
    """Exports of the torch that could be another spelling of a missing symbol: those sharing its
    most specific source name, demangled once."""

    torch: TorchExports
    cache: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def near(self, mangled: str) -> list[tuple[str, str]]:
        """The exports holding every source name of ``mangled`` but the standard library's (its
        other-ABI twin and its other signatures among them), in a stable order: all of them, since
        a common name (``Device``) is in thousands and a cut would depend on the set's order."""
        words = sorted({w for w in _tokens(mangled) if w not in _STD_TOKENS}, key=len, reverse=True)
        if not words:
            return []
        key = "\0".join(words)
        if key not in self.cache:
            self.cache[key] = [
                (n, demangle(n))
                for n in sorted(self.torch.exports)
                if n != mangled and all(w in n for w in words)
            ]
        return self.cache[key]


def _explain(need: Needed, torch: TorchExports, twins: _Twins) -> Missing:
    text = demangle(need.name)
    neutral = abi_neutral(text)
    qualified = abi_neutral(qualified_name(text))
    same_name: list[tuple[str, str]] = []
    for other, other_text in twins.near(need.name):
        if abi_neutral(other_text) == neutral:
            lib = torch.exporters(other)[0]
            torch_new = "St7__cxx11" in other or "B5cxx11" in other
            flag = "1" if torch_new else "0"
            wheel_flag = "0" if torch_new else "1"
            return Missing(
                need,
                text,
                "abi",
                f"a _GLIBCXX_USE_CXX11_ABI mismatch: {lib} exports it as {other_text} "
                f"(_GLIBCXX_USE_CXX11_ABI={flag}); {need.member} was compiled with "
                f"_GLIBCXX_USE_CXX11_ABI={wheel_flag}",
                lib,
            )
        if abi_neutral(qualified_name(other_text)) == qualified:
            same_name.append((other, other_text))
    if same_name:
        shown = "; ".join(t for _, t in same_name[:3])
        more = f" (+{len(same_name) - 3} more)" if len(same_name) > 3 else ""
        return Missing(
            need,
            text,
            "signature",
            f"it exports {qualified_name(text)} only with another signature: {shown}{more} (built against "
            "another torch's headers?)",
            torch.exporters(same_name[0][0])[0],
        )
    return Missing(
        need, text, "absent", "it exports no symbol of that name (removed or renamed in this torch?)"
    )


def judge(needs: TorchNeeds, torch: TorchExports) -> TorchAbiResult:
    """Conditions 5 and the judgement of the module docstring."""
    needed: list[Needed] = []
    others: list[Needed] = []
    missing: list[Missing] = []
    found = 0
    twins = _Twins(torch)
    for need in needs.symbols:
        libs = torch.exporters(need.name) or None
        if libs is None and not torch_owned(need.name):
            others.append(need)
            continue
        needed.append(need)
        if libs is None:
            missing.append(_explain(need, torch, twins))
            continue
        reach = torch.closure(need.links)
        if any(lib in reach for lib in libs):
            found += 1
            continue
        missing.append(
            Missing(
                need,
                demangle(need.name),
                "unlinked",
                f"only {', '.join(libs)} exports it, which {need.member} does not link (it links "
                f"{', '.join(need.links)}): add -l{libs[0].removeprefix('lib').split('.so')[0]}",
                libs[0],
            )
        )
    return TorchAbiResult(torch, needs.linking, tuple(needed), found, tuple(missing), tuple(others))


def needs_change(old: TorchNeeds, new: TorchNeeds) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The symbols needed from torch (by name: condition 5 without a torch) that ``new`` adds and
    removes, demangled and sorted."""
    before, after = old.by_name(), new.by_name()
    return (
        tuple(sorted(demangle(n) for n in after - before)),
        tuple(sorted(demangle(n) for n in before - after)),
    )


def summary_line(result: TorchAbiResult) -> str:
    """The report's line: what was checked against, and the counts."""
    torch = result.torch
    head = f"checked against {torch.label}"
    if not result.linking:
        return f"{head}: the wheel needs nothing from torch (no ELF member links a torch library)"
    if not result.needed:
        return f"{head}: {', '.join(result.linking)} link torch but need no symbol from it"
    counts = f"{len(result.needed)} symbol(s) needed from torch, {result.found} exported"
    if result.missing:
        counts += f", {len(result.missing)} MISSING"
        if result.abi_mismatch:
            counts += " (a _GLIBCXX_USE_CXX11_ABI mismatch)"
    if result.others:
        counts += f"; {len(result.others)} left to the other libraries"
    return f"{head}: {counts}"
