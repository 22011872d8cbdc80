"""A Python-independent job's wheel retagged to the tag its recipe declares, for any build backend.

scikit-build-core tags a ``py3-none`` or ``abi3`` wheel itself (``wheel.py-api``), setuptools does
not -- a binary makes it ``cp311-cp311``, and scikit-build-core's setuptools plugin refuses
``wheel.py_api`` ("not supported in setuptools mode"), so the gate's hint could not be followed.
Upstream retags with ``wheel tags`` after the build; the build does the same once the claim holds,
checked the way the gate checks it (:mod:`buildkit.gate.pyabi`), rewriting what ``wheel tags`` does
and keeping every other member's bytes, order and timestamps. A wheel whose claim does not hold is
left as it is: the gate then refuses it, naming the members."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path
from typing import TextIO

from packaging.utils import parse_wheel_filename

from buildkit.gate.pyabi import module_name_problem
from buildkit.inspect import inspect_wheel
from buildkit.judge.wheel import python_abi_for
from buildkit.plan.models import Job


def _claim_problems(wheel: Path, claim: str) -> list[str]:
    """What in ``wheel`` contradicts ``claim`` (``py3-none``, ``cp39-abi3``): empty when it holds."""
    report = inspect_wheel(wheel)
    problems = [f"{m}: {p}" for m in report.members if (p := module_name_problem(m, claim)) is not None]
    for member in python_abi_for(wheel, report, claim).members:
        if claim == "py3-none" and member.init:
            problems.append(f"{member.member} exports {', '.join(member.init)}")
        problems += [f"{member.member} uses {name}, outside the stable ABI" for name in member.non_abi3]
        problems += [f"{member.member} uses {name} (CPython {added})" for name, added in member.future]
    return problems


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def retag(wheel: Path, claim: str, dest: Path) -> Path:
    """``wheel`` written into the folder ``dest`` tagged ``claim`` on each of its platforms."""
    tags = parse_wheel_filename(wheel.name)[3]
    platforms = sorted({t.platform for t in tags})
    new_tags = [f"{claim}-{platform}" for platform in platforms]
    interpreter, abi = claim.split("-", 1)
    stem = wheel.name.removesuffix(".whl").split("-")
    out = dest / f"{'-'.join(stem[:-3])}-{interpreter}-{abi}-{'.'.join(platforms)}.whl"
    with zipfile.ZipFile(wheel) as source:
        infos = source.infolist()
        info_dir = next(i.filename.split("/")[0] for i in infos if i.filename.endswith(".dist-info/WHEEL"))
        wheel_member, record_member = f"{info_dir}/WHEEL", f"{info_dir}/RECORD"
        lines = source.read(wheel_member).decode().splitlines()
        first = next(n for n, line in enumerate(lines) if line.startswith("Tag:"))
        kept = [line for line in lines if not line.startswith("Tag:")]
        metadata = "\n".join([*kept[:first], *(f"Tag: {t}" for t in new_tags), *kept[first:]]) + "\n"
        data = metadata.encode()
        record = []
        for row in source.read(record_member).decode().splitlines():
            path = row.rsplit(",", 2)[0]
            record.append(f"{path},{_record_hash(data)},{len(data)}" if path == wheel_member else row)
        with zipfile.ZipFile(out, "w") as target:
            for info in infos:
                content = source.read(info)
                if info.filename == wheel_member:
                    content = data
                elif info.filename == record_member:
                    content = ("\n".join(record) + "\n").encode()
                target.writestr(info, content, compress_type=info.compress_type)
    return out


def to_claim(wheel: Path, job: Job, log: TextIO) -> Path:
    """The job's wheel with the recipe's tag (``job.wheel_tag``) when the build gave it another one and
    the claim holds (the old file replaced); else ``wheel`` as it is."""
    claim = job.wheel_tag
    if claim is None:
        return wheel
    pairs = {f"{t.interpreter}-{t.abi}" for t in parse_wheel_filename(wheel.name)[3]}
    if pairs == {claim}:
        return wheel
    problems = _claim_problems(wheel, claim)
    if problems:
        log.write(f"not retagged {claim}: " + "; ".join(problems) + "\n")
        return wheel
    (wheel.parent / ".retagged").mkdir(exist_ok=True)
    out = retag(wheel, claim, wheel.parent / ".retagged")
    final = wheel.parent / out.name
    wheel.unlink()
    out.replace(final)
    out.parent.rmdir()
    log.write(
        f"retagged {', '.join(sorted(pairs))} -> {claim}: {final.name} (its ELF members hold the claim)\n"
    )
    return final
