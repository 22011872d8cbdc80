"""The ``torch-abi`` rule: every symbol the wheel needs from torch is exported by the torch checked
against (``--torch-abi PATH|IMAGE``, or the job's torch wheel). What counts as needed, and how a
missing symbol's reason is found, is :mod:`buildkit.gate.torchabi`; this module words the findings."""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule

TORCH_ABI = Rule(
    "torch-abi",
    ("error",),
    checks=(
        "With a torch to check against (`--torch-abi` a torch wheel, an installed torch folder or a "
        "runtime image; in `build`, the torch wheel of a hermetic torch job's lock): every undefined, "
        "non-weak dynamic symbol of an ELF member linking a torch "
        "library that carries no version of another library, that no member of the wheel exports and "
        "that is torch's (exported by that torch, or named in `c10::`, `at::`, `torch::`, `caffe2::`) is "
        "exported by a torch library the member links (directly or through torch's own DT_NEEDED). "
        "The error names the symbol demangled, the member, the torch (file and version) and why: a "
        "`_GLIBCXX_USE_CXX11_ABI` mismatch, another signature, a library not linked, or absent."
    ),
    prevents=(
        "`ImportError: undefined symbol: _ZN3c10...` when the extension is imported with that torch "
        "(another torch release, or the other C++ ABI)."
    ),
)

RULES = (TORCH_ABI,)


def check(facts: Facts) -> Iterator[Finding]:
    """One error per missing symbol (the counts are the verdict's ``torch_abi`` line)."""
    result = facts.torch_abi
    if result is None:
        return
    label = result.torch.label
    for m in result.missing:
        yield TORCH_ABI.error(
            f"{m.symbol.member} needs {m.demangled} from torch, which {label} does not export: {m.detail}",
            file=m.symbol.member,
            library=m.library or ", ".join(m.symbol.links),
            symbol=m.symbol.name,
        )
