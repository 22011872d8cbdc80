"""What ``publish`` trusts: it runs the gate again on every wheel, with a configuration it can trust.

A manifest is a file anyone can write; each wheel is judged again (:func:`~buildkit.judge.judge_wheels`)
with the configuration of ``--recipe R``'s job that built it, or the one the manifest records once
its attestation (:mod:`buildkit.attestation`) verifies with ``--public-key K`` and signs the same
recipe sha256, job and gate configuration (REFERENCE.md, "Who is trusted when publishing").
With both, both are checked; with neither, every wheel is refused.

A split output of a ``wheel.split: per-target`` recipe is gated as ``build`` gated it
(:func:`buildkit.split.output_config`): the role and the device wheel's name come from the recipe
and the wheel itself, never from the manifest, so the ``device-wheel`` rule holds whatever the
manifest says. The ``torch-abi`` rule is not run again (the torch wheel the build locked is not
beside the wheel)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from buildkit.attestation import attestation_path, load_public_key, verify_attestation
from buildkit.errors import NotReproducible, UsageError
from buildkit.gate.config import GateConfig, gate_key
from buildkit.inspect import inspect_wheel
from buildkit.judge import judge_wheels
from buildkit.publish.refusal import Candidate, Refusal
from buildkit.recipe import Recipe
from buildkit.split import output_config

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from buildkit.plan.models import Plan

#: the environment variable naming the publisher's public key (``publish --public-key``)
PUBLIC_KEY_ENV = "BUILDKIT_PUBLISH_KEY"


@dataclass(frozen=True)
class Trust:
    """What the publisher named: the recipe (and its plan) and/or the public key the builds sign with;
    ``provenance``: the envelope bytes of each wheel whose attestation verified with that key (what a
    static index serves beside the wheel), filled as the wheels are checked."""

    recipe: Recipe | None = None
    plan: Plan | None = None
    key: Ed25519PublicKey | None = None
    key_path: Path | None = None
    provenance: dict[Path, bytes] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        recipe: Recipe | None,
        key_path: Path | None,
        *,
        expand: Callable[[Recipe], Plan] | None = None,
    ) -> Trust:
        """``expand``: how the recipe's plan is made (default: :func:`buildkit.plan.expansion.expand`
        without runtime images' ceilings)."""
        plan = None
        if recipe is not None:
            if expand is None:
                from buildkit.plan.expansion import expand as plain

                plan = plain(recipe)
            else:
                plan = expand(recipe)
        key = load_public_key(key_path) if key_path is not None else None
        return cls(recipe, plan, key, key_path)

    def describe(self) -> str:
        parts = []
        if self.recipe is not None:
            parts.append(f"the configuration of {self.recipe.display_path}'s job")
        if self.key_path is not None:
            parts.append(f"the configuration the attestation signed with {self.key_path} records")
        return " and ".join(parts) or "no trusted configuration"


def key_from_env(env: Mapping[str, str]) -> Path | None:
    value = env.get(PUBLIC_KEY_ENV, "").strip()
    return Path(value) if value else None


def _differences(recorded: Mapping[str, Any], expected: Mapping[str, Any]) -> str:
    keys = sorted(k for k in set(recorded) | set(expected) if recorded.get(k) != expected.get(k))

    def show(value: Any) -> str:
        return json.dumps(value, sort_keys=True)[:80]

    shown = [f"{k}: {show(recorded.get(k))} vs {show(expected.get(k))}" for k in keys[:4]]
    more = f" and {len(keys) - 4} more" if len(keys) > 4 else ""
    return "; ".join(shown) + more


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _signed(candidate: Candidate, trust: Trust) -> dict[str, Any] | Refusal:
    """The statement of the candidate's attestation once it verifies with the publisher's key and
    agrees with the manifest (recipe sha256, job, gate configuration); else the Refusal saying why."""
    assert trust.key is not None
    wheel, data = candidate.wheel, candidate.manifest
    path = attestation_path(wheel)
    if not path.is_file():
        return Refusal(
            wheel,
            f"unsigned: no attestation ({path.name}) beside the wheel, and --public-key {trust.key_path} "
            "requires one signed with that key (build with BUILDKIT_SIGNING_KEY)",
        )
    try:
        checked = verify_attestation(wheel, trust.key, path)
    except NotReproducible as exc:
        return Refusal(wheel, f"the signature does not hold: {exc.message}")
    definition = _obj(_obj(checked.statement.get("predicate")).get("buildDefinition"))
    params, inner = _obj(definition.get("externalParameters")), _obj(definition.get("internalParameters"))
    signed_recipe = _obj(_obj(params.get("recipe")).get("digest")).get("sha256")
    recorded_recipe = _obj(data.get("recipe")).get("sha256")
    if recorded_recipe != signed_recipe:
        return Refusal(
            wheel,
            f"forged or stale manifest: it records recipe sha256 {recorded_recipe}, the signed "
            f"attestation {signed_recipe}",
        )
    if (data.get("job") or {}) != (params.get("job") or {}):
        return Refusal(wheel, "forged or stale manifest: its job is not the one the attestation signs")
    signed_gate = inner.get("gate")
    if not isinstance(signed_gate, dict):
        return Refusal(
            wheel,
            "the signed attestation records no gate configuration (built before publish ran the gate "
            "again): publish it with --recipe R, or rebuild it",
        )
    if data.get("gate") != signed_gate:
        return Refusal(
            wheel,
            "forged manifest: its gate configuration is not the one the attestation signs ("
            + _differences(_obj(data.get("gate")), signed_gate)
            + ")",
        )
    trust.provenance[wheel] = checked.envelope
    return dict(signed_gate)


def trusted_config(candidate: Candidate, trust: Trust) -> GateConfig | Refusal:
    """The configuration to gate ``candidate`` with again (module docstring), or the Refusal saying why."""
    wheel, data = candidate.wheel, candidate.manifest
    signed: dict[str, Any] | None = None
    if trust.key is not None:
        result = _signed(candidate, trust)
        if isinstance(result, Refusal):
            return result
        signed = result
    if trust.recipe is not None and trust.plan is not None:
        job_id = data.get("job", {}).get("id") if isinstance(data.get("job"), dict) else None
        if not isinstance(job_id, str):
            return Refusal(wheel, f"the manifest records no job id, so no job of {trust.recipe.display_path}")
        try:
            job = trust.plan.job(job_id)
        except UsageError:
            where = trust.recipe.display_path
            return Refusal(wheel, f"job {job_id} (the manifest's) is not in the plan of {where}")
        config = _for_split_output(candidate, trust.recipe, GateConfig.from_job(job, trust.recipe))
        expected = gate_key(config)
        recorded = data.get("gate")
        if recorded is not None and recorded != expected:
            what = recorded if isinstance(recorded, dict) else {"gate": recorded}
            return Refusal(
                wheel,
                f"stale or forged manifest: the gate configuration it records is not the one "
                f"{trust.recipe.display_path} gives job {job_id} (" + _differences(what, expected) + ")",
            )
        return config
    if signed is not None:
        try:
            return GateConfig.from_json(signed)
        except UsageError as exc:
            return Refusal(wheel, f"the signed gate configuration is unusable: {exc.message}")
    return Refusal(
        wheel,
        "no trusted gate configuration: the manifest's claims are not taken on trust; give --recipe R "
        f"(the recipe it was built from) or --public-key K (or {PUBLIC_KEY_ENV}: the key its "
        "attestation is signed with) and the gate runs again",
    )


def _for_split_output(candidate: Candidate, recipe: Recipe, config: GateConfig) -> GateConfig:
    """The job's ``config`` for the split output ``candidate`` is (module docstring); else unchanged."""
    split = candidate.manifest.get("split")
    if recipe.wheel.split != "per-target" or not isinstance(split, dict):
        return config
    target = split.get("target")
    if target is not None:
        return output_config(config, target=str(target), bundles=False)
    report = inspect_wheel(candidate.wheel, verify_record=False)
    bundles = any(entry.gfx is not None for elf in report.elves for entry in elf.offload_targets)
    return output_config(config, target=None, bundles=bundles)


def regate(candidate: Candidate, config: GateConfig) -> Refusal | None:
    """Run the gate again on ``candidate`` with ``config``: None when it passes these very bytes."""
    wheel = candidate.wheel
    verdicts, failures = judge_wheels([wheel], config._replace(torch_abi=None))
    if failures:
        return Refusal(wheel, f"unreadable: {failures[0].error}")
    verdict = verdicts[0]
    if verdict.sha256 != candidate.sha256:
        return Refusal(wheel, f"the wheel changed while it was checked (sha256 now {verdict.sha256})")
    if not verdict.passed:
        errors = [f.message for f in verdict.errors]
        shown = "; ".join(errors[:3]) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")
        return Refusal(wheel, f"the gate, run again, fails it: {shown}")
    return None


def verify(candidates: list[Candidate], trust: Trust) -> list[Refusal]:
    """The refusals among ``candidates``: no trusted configuration, or the gate fails the wheel now."""
    refusals: list[Refusal] = []
    for candidate in candidates:
        config = trusted_config(candidate, trust)
        result = config if isinstance(config, Refusal) else regate(candidate, config)
        if result is not None:
            refusals.append(result)
    return refusals
