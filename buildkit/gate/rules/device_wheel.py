"""The ``device-wheel`` rule: a device wheel of ``buildkit split`` (``GateConfig.device_target``)
carries code objects of its one gfx processor and nothing else but its metadata.

``split`` moves each standalone code object into the device wheel of the processor its ELF header
names (``e_flags``); this rule judges the written wheel on its own, so that a device wheel holding
another target's code, host code or any other file is refused whoever wrote it.
"""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule

DEVICE_WHEEL = Rule(
    "device-wheel",
    ("error",),
    checks=(
        "A device wheel (`buildkit split`; `check --device-target gfxN`): every member outside its "
        "`.dist-info` is a standalone AMDGPU code object whose ELF header (`e_flags`) names the wheel's "
        "processor, and there is at least one."
    ),
    prevents=(
        "`pip install 'pkg[gfx942]'` installing gfx950 code (the kernels of the user's GPU are missing) "
        "or host code and data that the host wheel installs too (two distributions owning one file: "
        "uninstalling either breaks the other)."
    ),
    never_waived="a device wheel is correct or split again",
)

RULES = (DEVICE_WHEEL,)


def check(facts: Facts) -> Iterator[Finding]:
    target = facts.config.device_target
    if target is None:
        return
    report = facts.report
    dist_info = report.dist_info_dir
    code_objects = {co.member: co for co in report.code_objects}
    for name in report.members:
        if name.endswith("/") or (dist_info is not None and name.startswith(dist_info + "/")):
            continue
        co = code_objects.get(name)
        if co is None:
            what = "host ELF code" if report.elf(name) is not None else "not a code object"
            yield DEVICE_WHEEL.error(
                f"{name} is {what}: a device wheel of {target} carries only its code objects "
                "(the host wheel keeps everything else)",
                file=name,
            )
        elif co.gfx != target:
            yield DEVICE_WHEEL.error(
                f"{name} is code for {co.target_id} (its ELF header), not {target}: it belongs in the "
                f"device wheel of {co.gfx}",
                file=name,
                symbol=co.target_id,
            )
    if not code_objects:
        yield DEVICE_WHEEL.error(f"the device wheel of {target} has no code object")
