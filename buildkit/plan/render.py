"""The plan's renderers: a table, JSON, and GitHub Actions ``strategy.matrix`` shards.

Identical plans give byte-identical output: sorted keys, no timestamps, no absolute paths.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from typing import Any

from buildkit.plan.models import Job, Plan, printable
from buildkit.recipe import Recipe
from buildkit.tables import table_lines
from buildkit.targets import ALWAYS_EXPORTED

#: GitHub Actions refuses a matrix of more than 256 jobs.
GITHUB_MAX_JOBS = 256
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _dumps(obj: Any, *, compact: bool = False) -> str:
    """Sorted-key JSON, non-ASCII kept as UTF-8; a lone surrogate (which has no UTF-8 encoding)
    becomes its JSON escape ``\\udcff``, so the output is always valid UTF-8."""
    if compact:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    else:
        text = json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    # surrogates only occur inside JSON strings, where \uXXXX is a valid escape
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def render_json(plan: Plan) -> str:
    """The plan as JSON, one compact line per job or skipped combination (the C encoder), diffs readable."""
    data = {"schema": "rocm-buildkit/plan", "schema_version": 1, **plan.to_json()}  # plan.schema.json
    parts = []
    for key in sorted(data):
        value = data[key]
        if isinstance(value, list) and value:
            body = ",\n".join("  " + _dumps(item, compact=True) for item in value)
            parts.append(f"{json.dumps(key)}: [\n{body}\n]")
        else:
            parts.append(f"{json.dumps(key)}: {_dumps(value, compact=True)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _github_entry(job: Job) -> dict[str, Any]:
    """One ``strategy.matrix.include`` entry: flat strings a workflow step can use directly."""
    return {
        "id": job.id,
        "python": job.python,
        "cp_tag": job.cp_tag,
        "rocm": job.rocm,
        "torch": job.torch or "",
        "torch_index_url": job.torch_index_url or "",
        "version": job.version,
        "policy": job.policy,
        "image_profile": job.image_profile,
        "pytorch_rocm_arch": job.archs.pytorch_rocm_arch(),
        "wheel_tag": job.wheel_tag or "",
        "serves": " ".join(job.pythons),
    }


def github_matrix(plan: Plan, shard_size: int = GITHUB_MAX_JOBS) -> dict[str, Any]:
    """``{"shards": [{"include": [...]}, ...], "shard_count": n, "job_count": m}``; each shard is a
    valid ``strategy.matrix`` of at most ``shard_size`` (<= 256) jobs."""
    if not 1 <= shard_size <= GITHUB_MAX_JOBS:
        raise ValueError(f"shard size must be within 1..{GITHUB_MAX_JOBS}")
    entries = [_github_entry(j) for j in plan.jobs]
    shards = [{"include": entries[i : i + shard_size]} for i in range(0, len(entries), shard_size)]
    return {"job_count": len(entries), "shard_count": len(shards), "shards": shards}


def render_github(plan: Plan, shard_size: int = GITHUB_MAX_JOBS) -> str:
    """Compact one-line JSON, ready for ``echo "matrix=$(...)" >> "$GITHUB_OUTPUT"``."""
    return _dumps(github_matrix(plan, shard_size), compact=True) + "\n"


def github_outputs(
    plan: Plan, shard_size: int = GITHUB_MAX_JOBS, slots: int | None = None
) -> list[tuple[str, str]]:
    """The step outputs ``plan --format github`` writes to ``$GITHUB_OUTPUT`` in GitHub Actions:
    ``matrix`` (what stdout gets: every shard), ``job_count``, ``shard_count`` and each shard as
    ``shard0``, ``shard1``, ... (a ``strategy.matrix`` value: ``fromJSON(needs.plan.outputs.shard0)``).
    ``slots``: the shard jobs a workflow has; each gets an output (``{"include": []}`` past the
    plan's shards), and a plan of more shards raises ValueError naming the counts."""
    matrix = github_matrix(plan, shard_size)
    shards = list(matrix["shards"])
    if slots is not None:
        if len(shards) > slots:
            raise ValueError(
                f"{matrix['job_count']} jobs make {len(shards)} shards; the workflow runs {slots}"
            )
        shards += [{"include": []}] * (slots - len(shards))
    outputs = [
        ("matrix", _dumps(matrix, compact=True)),
        ("job_count", str(matrix["job_count"])),
        ("shard_count", str(matrix["shard_count"])),
    ]
    outputs += [(f"shard{i}", _dumps(shard, compact=True)) for i, shard in enumerate(shards)]
    return outputs


def render_table(plan: Plan, *, styled: bool = False) -> str:
    """The plan as a person reads it; ``styled`` (a terminal): the tables' headers bold."""
    r = plan.recipe
    lines = [
        f"recipe {printable(r.path.name)} ({r.name}, sha256 {r.sha256[:12]}): "
        f"{len(plan.jobs)} job{'s' if len(plan.jobs) != 1 else ''}, {len(plan.skipped)} skipped",
        "",
    ]
    if plan.jobs:
        lines += [*_jobs_table(plan, styled), "", *_job_settings(plan.jobs[0])]
    lines += _image_and_hooks(r)
    extra = [name for name, _ in r.archs.export if name not in ALWAYS_EXPORTED]
    if plan.jobs and extra:
        lines.append("")
        lines.append("arch variables (archs.export; PYTORCH_ROCM_ARCH and GPU_ARCHS as ARCHS):")
        rows = [["JOB", *extra]] + [
            [j.id, *(j.archs.exported(r.archs.export).get(name, "") for name in extra)] for j in plan.jobs
        ]
        lines += [f"  {line}" for line in table_lines(rows, styled=styled)]
    if plan.notes:
        lines.append("")
        lines += [f"note: {n}" for n in plan.notes]
    if plan.skipped:
        lines += ["", "skipped:"]
        lines += [
            "  " + line for line in table_lines([[s.id, s.reason] for s in plan.skipped], styled=styled)
        ]
    return printable("\n".join(lines) + "\n")


def _jobs_table(plan: Plan, styled: bool) -> list[str]:
    """A row per job; a Python-independent wheel (wheel: py3-none/abi3) adds its tag and the Pythons it
    serves."""
    r = plan.recipe
    shared = not r.wheel.per_python
    rows = [
        [
            "JOB",
            "PYTHON",
            *(["WHEEL", "SERVES"] if shared else []),
            "ROCM",
            "TORCH",
            "ARCHS",
            "IMAGE",
            "VERSION",
        ]
    ]
    for j in plan.jobs:
        rows.append(
            [
                j.id,
                j.python,
                *([j.wheel_tag or "", ",".join(j.pythons)] if shared else []),
                j.rocm,
                j.torch or (f"stable>={j.torch_stable.lowest}" if j.torch_stable else "-"),
                j.archs.pytorch_rocm_arch(),
                j.image_profile,
                j.version,
            ]
        )
    lines = table_lines(rows, styled=styled)
    if shared:
        lines.append("")
        lines.append(
            f"wheel {r.wheel.tag}: one job per cell, built with its lowest CPython (PYTHON); "
            "the gate checks the tag, smoke runs under every Python it serves (SERVES)"
        )
    return lines


def _job_settings(first: Job) -> list[str]:
    """What every job shares: the policy's ceilings, the torch stable ABI, the sysroot, ROCm from pip,
    the no-regression baseline."""
    origin = ""
    if first.ceilings_from_images:
        origin = f" (tightened by from_image {', '.join(first.ceilings_from_images)})"
    ceilings = ", ".join(f"{k} {v}" for k, v in sorted(first.ceilings.items()))
    lines = [f"policy {first.policy}: ceilings {ceilings}{origin}"]
    if first.torch_stable is not None:
        stable = first.torch_stable
        lines.append(
            f"torch stable ABI: each job builds once against {first.torch_requirement} with "
            f"{stable.flags}; its wheel requires {stable.requirement} (the torch-stable-abi rule)"
        )
    if first.sysroot is not None:
        lines.append(
            f"sysroot {first.sysroot}: every host compile uses the image's compatibility sysroot "
            "(its glibc and libstdc++ bound the wheel's symbol versions)"
        )
    if first.rocm_pip is not None:
        lines.append(
            f"rocm from pip: the wheel requires {first.rocm_pip_requirement} (no system ROCm; RPATH "
            f"$ORIGIN/../_rocm_sdk_core/lib), built with {first.rocm_pip_build_requirement} "
            "from the hermetic wheelhouse (the compiler is the builder image's hipcc)"
        )
    if first.regression_baseline is not None:
        lines.append(f"gate: no regression against the last release in {first.regression_baseline}")
    return lines


def _image_and_hooks(r: Recipe) -> list[str]:
    """What the recipe adds to its builder image and to cibuildwheel's run (nothing for defaults)."""
    out: list[str] = []
    spec = r.image
    if spec.kind == "dockerfile":
        # the context the build uses: image.context, else the Dockerfile's folder (relative to the recipe)
        folder = spec.context or posixpath.dirname(spec.dockerfile or "") or "."
        given = "" if spec.context else ", the Dockerfile's folder"
        out.append(f"image: the project's Dockerfile {spec.dockerfile} (context {folder}{given})")
    elif spec.kind == "ref":
        out.append(f"image: {spec.ref}, used as is")
    if spec.packages:
        out.append(f"image packages (a layer over {spec.profile}): {' '.join(spec.packages)}")
    if spec.build_args:
        out.append("image build args: " + " ".join(f"{k}={v}" for k, v in spec.build_args.items()))
    h = r.hooks
    for name, commands in (("before_all", h.before_all), ("before_build", h.before_build)):
        if commands:
            out.append(f"{name}: {' && '.join(commands)}")
    if h.config_settings:
        out.append("config_settings: " + " ".join(f"{k}={v}" for k, vs in h.config_settings for v in vs))
    if h.build_frontend != "build":
        out.append(f"build_frontend: {h.build_frontend}")
    if h.test_command:
        requires = f" (after installing {' '.join(h.test_requires)})" if h.test_requires else ""
        out.append(f"test_command: {' && '.join(h.test_command)}{requires}")
    return ["", *out] if out else []


RENDERERS: dict[str, Callable[[Plan], str]] = {
    "table": render_table,
    "json": render_json,
    "github": render_github,
}
