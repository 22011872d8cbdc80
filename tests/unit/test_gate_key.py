"""``build``'s gate key (:func:`buildkit.gate.config.gate_key`): part of every job's inputs key and
recorded in each manifest, so its value for an unchanged configuration must never change (every
up-to-date wheel would rebuild, and ``publish`` would refuse the wheels built before).

The fields GateConfig gained after the key was first recorded are in the key only when set: they are
the fields declared after ``KEYED_UP_TO`` (a hand-written list before), so a new field, declared last,
leaves the keys of earlier builds valid without being listed anywhere."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from buildkit.gate.config import KEYED_UP_TO, SINCE_KEYED, GateConfig, gate_key
from buildkit.gate.options import rocm_pin
from buildkit.gatespec import Required
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from buildkit.records import shape_of, to_data

#: sha256 of the key's JSON (keys sorted) for configurations that read no ROCm data, computed with the
#: hand-written list of fields (torch_abi, size_per_target, device_target) before it was derived
PINNED = {
    "defaults": "bb3b5343854f77ca1086e02a8db3b83a9623116144acc4628acd2abb6a18da6c",
    "later fields set": "57f9fd16026aad0d2006b74c2684793347a57c224907a45451e9762950bacc0f",
    "required": "3ef777272c9a51ace51dc32400c265f6cd67d62491672e628180e2ab9d0754fe",
}
CONFIGS = {
    "defaults": GateConfig(),
    "later fields set": GateConfig(torch_abi="/t/torch.whl", size_per_target=1 << 20)._replace(
        device_target="gfx942"
    ),
    "required": GateConfig(required=(Required("pkg/*.so", "--require"),)),
}
RECIPE = (
    "name: demo\nsource: {path: .}\nversion: {base: '1.0'}\npython: ['3.12']\nrocm: ['6.4']\n"
    "archs: {list: [gfx90a]}\nmanylinux: {policy: manylinux_2_28}\nimage: manylinux_2_28-rocm\n"
    "size_budget: {warn: 10MiB, limit: 20MiB}\n"
)


def _digest(key: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _listed_key(config: GateConfig) -> dict[str, Any]:
    """The key as gate_key computed it with the fields listed by hand (the reference)."""
    data: dict[str, Any] = json.loads(json.dumps(to_data(config), sort_keys=True, default=str))
    data.pop("recipe", None)
    for added in ("torch_abi", "size_per_target", "device_target"):
        if data.get(added) is None:
            data.pop(added, None)
    return data


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_key_of_an_unchanged_configuration_is_unchanged(name: str) -> None:
    assert _digest(gate_key(CONFIGS[name])) == PINNED[name]


def test_a_jobs_key_is_the_one_the_listed_fields_gave(tmp_path: Path) -> None:
    """A recipe job's configuration (ROCm SONAMEs from the data, a size budget, the job's identity) and
    flags' ones: the same key as with the hand-written list."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "r.yaml").write_text(RECIPE)
    recipe = load_recipe(tmp_path / "r.yaml")
    configs = [
        GateConfig.from_job(expand(recipe).jobs[0], recipe),
        GateConfig(
            policy="manylinux_2_28", archs=("gfx90a", "gfx942"), ceilings={"GLIBC": "2.28"}, **rocm_pin("6.4")
        ),
        *CONFIGS.values(),
    ]
    for config in configs:
        assert gate_key(config) == _listed_key(config)
    assert "recipe_sha256" in gate_key(configs[0]) and "recipe" not in gate_key(configs[0])


def test_the_fields_since_the_first_key_are_left_out_unset_and_kept_set() -> None:
    """Every field declared after KEYED_UP_TO is absent from the key unset and present (under its own
    name: gate_key drops it by that name) once set; the fields up to it are always there."""
    assert SINCE_KEYED[:3] == ("torch_abi", "size_per_target", "device_target")
    assert KEYED_UP_TO in gate_key(GateConfig())
    shape = shape_of(GateConfig)
    assert shape is not None
    names = {(k.attr or k.name): k.name for k in shape.keys(GateConfig)}
    assert all(names[field] == field for field in SINCE_KEYED)
    assert not set(SINCE_KEYED) & set(gate_key(GateConfig()))
    assert {"torch_abi", "size_per_target", "device_target"} <= set(gate_key(CONFIGS["later fields set"]))
