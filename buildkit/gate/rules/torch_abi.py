"""The ``torch-abi`` rule: every symbol the wheel needs from torch is exported by the torch checked
against (``--torch-abi PATH|IMAGE``, or the job's torch wheel). What counts as needed, and how a
missing symbol's reason is found, is :mod:`buildkit.gate.torchabi`; this module words the findings.

The ``torch-stable-abi`` rule: a wheel declared on the libtorch stable ABI (``--torch-stable FROM``,
the recipe's ``torch: {abi: stable, from: ...}``) needs from torch its stable C shim alone, each
function already in torch FROM (:mod:`buildkit.gate.torchshim` judges it)."""

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

TORCH_STABLE_ABI = Rule(
    "torch-stable-abi",
    ("error",),
    checks=(
        "With a stable-ABI torch range (`--torch-stable FROM`; the recipe's `torch: {abi: stable, from: "
        "FROM}`): every symbol the wheel needs from torch (as `torch-abi` counts them, by name without a "
        "torch) is a function of torch's stable C shim (`torch_*`, `aoti_torch_*` of "
        "`torch/csrc/stable/c/shim.h` and `torch/csrc/inductor/aoti_torch/`) that appeared in torch FROM or "
        "before, by the table of shim functions made from real torch wheels "
        "(`buildkit/gate/torch_shim.json`). A libtorch/c10 C++ symbol is refused demangled with the "
        "member needing it, a shim function newer than FROM with the release it appeared in, any other "
        "torch name as outside the shim. The report gives the torch range the wheel serves."
    ),
    prevents=(
        "A wheel sold as one build for every torch from FROM that fails under the next torch "
        "(`undefined symbol: _ZN3c10...`: it used the C++ API) or under FROM itself (`undefined symbol: "
        "torch_...`: it was built targeting a newer torch)."
    ),
)

RULES = (TORCH_ABI, TORCH_STABLE_ABI)


def check(facts: Facts) -> Iterator[Finding]:
    """One error per missing symbol (the counts are the verdict's ``torch_abi`` line), one per symbol
    a stable-ABI wheel may not need."""
    stable = facts.torch_stable
    for r in stable.refused if stable is not None else ():
        assert stable is not None
        yield TORCH_STABLE_ABI.error(
            f"{r.symbol.member} needs {r.demangled} from torch, but a stable-ABI wheel serving torch "
            f">={stable.lowest} may need only torch's stable C shim: {r.detail}",
            file=r.symbol.member,
            library=", ".join(r.symbol.links),
            symbol=r.symbol.name,
        )
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
