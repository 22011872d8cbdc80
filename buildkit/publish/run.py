"""``publish``: put gated wheels on an index, only when their manifest proves the gate passed.

The manifest (:mod:`buildkit.manifest`) is a claim, not a proof: each wheel's sha256 is recomputed,
and the gate runs again with a configuration ``publish`` trusts (:mod:`buildkit.publish.trust`)
before anything is written or uploaded. One refusal among the wheels under DIST publishes nothing
(:class:`~buildkit.errors.PublishRefused`, exit 10). With ``--recipe`` every wheel must have been built
from that very recipe file (its manifest's recipe sha256); ``--to`` takes wheels of any recipe.
``dry_run`` does every check and reads the target's state, and writes nothing.

A network failure is :class:`~buildkit.errors.PublishUnavailable` (exit 13: retry), never a refusal
(retrying gives the same answer); a TLS certificate that does not verify is a refusal.

Targets (:func:`buildkit.publish.target.parse_target`):

- ``directory``: a path or ``file://`` URL, a static PEP 503 index (:mod:`buildkit.publish.index`).
  An empty path or one that cannot become a writable directory is a
  :class:`~buildkit.errors.UsageError` (exit 2), raised before anything is written.
- ``index``: an ``http(s)://`` upload URL, ``twine upload --repository-url`` (credentials:
  :mod:`buildkit.publish.remote`).
- ``pypi``: like ``index``, but a wheel with a PEP 440 local label is refused (PyPI rejects them).

Idempotent: before anything is published EVERY checked wheel is compared with the target's state
(the simple page, or the static index under its lock): the same sha256 is "already published",
other bytes refuse the whole batch. The bytes published are the bytes checked
(:func:`buildkit.publish.index.copy_verified`)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from buildkit.errors import PublishRefused, PublishUnavailable, UsageError
from buildkit.publish import index as static_index
from buildkit.publish.refusal import Candidate, check_all, collect, project_of
from buildkit.publish.remote import (
    RemoteFile,
    credentials_for,
    fetch_sha256,
    remote_files,
    twine_upload,
)
from buildkit.publish.scrub import strip_userinfo
from buildkit.publish.target import Target
from buildkit.publish.trust import PUBLIC_KEY_ENV, Trust, key_from_env, verify
from buildkit.pyindex import Credentials
from buildkit.recipe import Recipe

if TYPE_CHECKING:
    from buildkit.plan.models import Plan


@dataclass(frozen=True)
class Outcome:
    wheel: Path
    status: str  # "published" | "already published" | "would publish" (dry run)
    where: str


def publish(
    dist: Path,
    target: Target,
    *,
    env: Mapping[str, str] | None = None,
    log: Callable[[str], None] = lambda line: None,
    recipe: Recipe | None = None,
    dry_run: bool = False,
    public_key: Path | None = None,
    expand: Callable[[Recipe], Plan] | None = None,
    require_signature: bool = False,
) -> list[Outcome]:
    """Check every wheel under ``dist`` and the target's state, then publish; returns what happened.

    ``recipe``/``public_key`` (default: ``BUILDKIT_PUBLISH_KEY`` of ``env``): what is trusted
    (:mod:`buildkit.publish.trust`). ``expand``: how the recipe's plan is made (the CLI reads runtime
    images' ceilings as ``build`` does). ``require_signature``: a key is required, with ``recipe`` too
    (UsageError without one, before anything is read)."""
    environ = dict(os.environ if env is None else env)
    key = public_key or key_from_env(environ)
    signed_by_recipe = recipe is not None and recipe.publish is not None and recipe.publish.require_signature
    if (require_signature or signed_by_recipe) and key is None:
        why = (
            f"{recipe.display_path} sets publish.require_signature"
            if signed_by_recipe and recipe is not None
            else "--require-signature"
        )
        raise UsageError(
            f"{why}: give --public-key K (or {PUBLIC_KEY_ENV}), the ed25519 key the builds sign their "
            "attestations with (BUILDKIT_SIGNING_KEY): each wheel must be one a signed attestation names"
        )
    if target.kind == "directory":  # an unwritable target is refused before anything is written
        static_index.check_root(Path(target.location))
    trust = Trust.of(recipe, key, expand=expand)
    candidates = check_all(
        collect(dist, target), target, recipe, dist=dist, verify=lambda found: verify(found, trust)
    )
    log(
        f"{len(candidates)} wheel(s) checked: sha256 recomputed and matching the manifest, the gate run "
        f"again with {trust.describe()}: passed"
    )
    if recipe is not None:
        log(f"every wheel was built from {recipe.display_path} (sha256 {recipe.sha256[:12]})")
    if target.kind == "directory":
        return _publish_directory(candidates, Path(target.location), log, trust.provenance, dry_run=dry_run)
    return _publish_remote(candidates, target, environ, log, dry_run=dry_run)


def _publish_directory(
    candidates: list[Candidate],
    root: Path,
    log: Callable[[str], None],
    provenance: Mapping[Path, bytes],
    *,
    dry_run: bool,
) -> list[Outcome]:
    """The wheels into the static index at ``root``, each with its verified attestation (``provenance``)."""
    pairs = [(c.wheel, c.sha256) for c in candidates]
    if dry_run:
        results = static_index.check_additions(root, pairs)
    else:
        results = static_index.add_wheels(root, pairs, provenance)
    new = "would publish" if dry_run else "published"
    outcomes = [
        Outcome(c.wheel, new if r.status == "published" else "already published", str(r.path))
        for c, r in zip(candidates, results, strict=True)
    ]
    for o in outcomes:
        log(f"{o.status}: {o.wheel.name} -> {o.where}")
    if dry_run:
        log(f"dry run: nothing was written to {root}")
    return outcomes


def _remote_state(candidates: list[Candidate], target: Target, credentials: Credentials | None) -> list[bool]:
    """For each candidate, whether it is already on the index; any conflict raises PublishRefused
    naming every one (same file name with other bytes there, or twice under DIST). An index that
    cannot be reached raises PublishUnavailable."""
    assert target.simple_url is not None
    pages: dict[str, dict[str, RemoteFile]] = {}
    seen: dict[str, str] = {}
    present: list[bool] = []
    conflicts: list[str] = []
    for c in candidates:
        name = c.wheel.name
        if name in seen:  # the same file twice under DIST: published once
            present.append(True)
            if seen[name] != c.sha256:
                conflicts.append(
                    f"  {c.wheel}: another wheel under DIST has this file name with other bytes "
                    f"(sha256 {seen[name]}, this wheel {c.sha256})"
                )
            continue
        seen[name] = c.sha256
        project = project_of(c.wheel)
        if project not in pages:
            pages[project] = remote_files(target.simple_url, project, credentials)
        remote = pages[project].get(name)
        if remote is None:
            present.append(False)
            continue
        sha = remote.sha256 or fetch_sha256(remote.url, credentials)
        present.append(True)
        if sha != c.sha256:
            where = f"{strip_userinfo(target.simple_url).rstrip('/')}/{project}/"
            conflicts.append(
                f"  {name}: {where} already has a file of this name with other bytes "
                f"(sha256 {sha}, this wheel {c.sha256}); a released file is never replaced"
            )
    if conflicts:
        head = f"publish refused: {len(conflicts)} of {len(candidates)} wheel(s); nothing was published"
        raise PublishRefused("\n".join([head, *conflicts]))
    return present


def _remote_state_or_unavailable(
    candidates: list[Candidate], target: Target, credentials: Credentials | None, *, dry_run: bool
) -> list[bool]:
    try:
        return _remote_state(candidates, target, credentials)
    except PublishUnavailable as exc:
        done = (
            f"dry run: {len(candidates)} wheel(s) passed every check, but whether they are already on "
            f"{target.describe()} is unknown"
            if dry_run
            else "nothing was published"
        )
        raise PublishUnavailable(f"{exc.message}\n  {done}") from None


def _publish_remote(
    candidates: list[Candidate],
    target: Target,
    env: Mapping[str, str],
    log: Callable[[str], None],
    *,
    dry_run: bool = False,
) -> list[Outcome]:
    assert target.simple_url is not None
    credentials = credentials_for(target.location, env)
    present = _remote_state_or_unavailable(candidates, target, credentials, dry_run=dry_run)
    where = {
        c.wheel: f"{strip_userinfo(target.simple_url).rstrip('/')}/{project_of(c.wheel)}/" for c in candidates
    }
    if dry_run:
        planned = [
            Outcome(c.wheel, "already published" if there else "would publish", where[c.wheel])
            for c, there in zip(candidates, present, strict=True)
        ]
        for o in planned:
            log(f"{o.status}: {o.wheel.name} -> {o.where}")
        log(f"dry run: nothing was uploaded to {strip_userinfo(target.location)}")
        return planned
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="buildkit-publish-") as private:  # mode 0700
        copies: list[Path | None] = []
        for c, there in zip(candidates, present, strict=True):  # every copy verified before any upload
            copy = Path(private) / c.wheel.name
            if not there:
                static_index.copy_verified(c.wheel, copy, c.sha256)
            copies.append(None if there else copy)
        for c, upload in zip(candidates, copies, strict=True):
            if upload is None:
                outcomes.append(Outcome(c.wheel, "already published", where[c.wheel]))
            else:
                _upload(upload, target, env, log, outcomes)
                outcomes.append(Outcome(c.wheel, "published", where[c.wheel]))
            log(f"{outcomes[-1].status}: {c.wheel.name} -> {where[c.wheel]}")
    return outcomes


def _upload(
    wheel: Path, target: Target, env: Mapping[str, str], log: Callable[[str], None], done: list[Outcome]
) -> None:
    """:func:`twine_upload`; a failure names the wheels this run uploaded before it."""
    try:
        twine_upload(wheel, target.location, env, log)
    except (PublishRefused, PublishUnavailable) as exc:
        uploaded = [o.wheel.name for o in done if o.status == "published"]
        if not uploaded:
            raise
        raise type(exc)(f"{exc.message}\n  uploaded before the failure: {', '.join(uploaded)}") from None


def outcomes_json(outcomes: list[Outcome], target: Target, *, dry_run: bool = False) -> str:
    data = {
        "schema": "rocm-buildkit/publish",
        "schema_version": 1,
        "ok": True,
        "target": {"kind": target.kind, "location": target.location},
        "dry_run": dry_run,
        "wheels": [{"wheel": str(o.wheel), "status": o.status, "where": o.where} for o in outcomes],
    }
    return json.dumps(data, indent=2, sort_keys=True)


def refusals_json(refused: PublishRefused, target: Target, *, dry_run: bool = False) -> str:
    """``publish --json`` when wheels are refused: nothing published, each refused wheel and why."""
    data = {
        "target": {"kind": target.kind, "location": target.location},
        "dry_run": dry_run,
        "wheels": [],
        "refused": [{"wheel": wheel, "reason": reason} for wheel, reason in refused.refusals],
        "error": refused.message,
    }
    return json.dumps(data, indent=2, sort_keys=True)
