"""``buildkit publish`` as a library call (:func:`run_publish`): the target, the publish log
(credentials scrubbed), :func:`buildkit.publish.run.publish` with the recipe's jobs as ``build``
expands them (:func:`buildkit.service.plan.plan_of`), and with ``check_install`` what pip and uv
resolve (:mod:`buildkit.publish.resolution`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from buildkit.errors import InstallCheckInconclusive, InstallResolutionFailed, PublishRefused, UsageError
from buildkit.plan.models import Plan
from buildkit.publish import resolution
from buildkit.publish import run as publishing
from buildkit.publish.scrub import scrub, secrets_from
from buildkit.publish.target import Target, parse_target, target_of
from buildkit.recipe import Recipe, load_recipe

Echo = Callable[[str], None]
#: called with a refusal and the target before the refusal is raised (``publish --json`` prints the
#: refused wheels and the target in its error document)
_OnRefused = Callable[[PublishRefused, Target], None]


@dataclass(frozen=True)
class PublishRun:
    """What ``publish`` did: an outcome per wheel, the target, and with ``check_install`` what each
    tool resolves (None without it)."""

    outcomes: list[publishing.Outcome]
    target: Target
    resolved: list[resolution.Resolution] | None = None
    #: why the install check could only ask the published index (the public one did not answer)
    inconclusive: str | None = None

    def failure(self) -> InstallResolutionFailed | InstallCheckInconclusive | None:
        """InstallResolutionFailed when pip or uv would install a file from another index, another
        version or nothing, or when nothing was checked; InstallCheckInconclusive when the public
        index could not be asked; else None."""
        if self.resolved is None:
            return None
        failed = [r for r in self.resolved if r.failed]
        if failed:
            return InstallResolutionFailed(
                f"published, but {len(failed)} install resolution(s) would not get the published file:\n"
                + "\n".join(f"  {r.describe()}" for r in failed)
            )
        if not any(r.checked for r in self.resolved):
            asked = len({r.target for r in self.resolved})
            return InstallResolutionFailed(
                f"published, but the install check checked nothing ({asked} target(s), no resolver "
                "answered): install uv or pip, or look at the wheels' tags"
            )
        if self.inconclusive is not None:
            return InstallCheckInconclusive(
                f"published; the wheels resolve from the published index alone, but {self.inconclusive}: "
                "whether it shadows them is not known; retry, or give --local-only when users install "
                "from the published index alone"
            )
        return None


def run_publish(
    dist: str | Path,
    *,
    to: str | None = None,
    recipe: str | Path | None = None,
    simple_url: str | None = None,
    log_file: str | Path | None = None,
    dry_run: bool = False,
    public_key: str | Path | None = None,
    check_install: bool = False,
    pypi_url: str = resolution.PYPI_SIMPLE,
    local_only: bool = False,
    require_signature: bool = False,
    echo: Echo = lambda _line: None,
    on_refused: _OnRefused | None = None,
) -> PublishRun:
    """Publish every wheel under ``dist`` to ``to``, else to ``recipe``'s publish target (neither:
    UsageError). The log, scrubbed of the environment's credentials, goes to ``echo`` and ``log_file``,
    which also keeps the error (``on_refused`` is called first for a PublishRefused). ``check_install``
    (not on a dry run: UsageError): then ask pip and uv what they resolve beside ``pypi_url``."""
    if check_install and dry_run:
        raise UsageError(CHECK_INSTALL_DRY_RUN)
    if to is None and recipe is None:
        raise UsageError("give --to TARGET, --recipe R (its publish section), or both (the target of --to)")
    loaded = load_recipe(str(recipe)) if recipe is not None else None
    if to is not None:
        target = parse_target(to, simple_url=simple_url)
    else:
        assert loaded is not None
        target = target_of(loaded, simple_url=simple_url)
    secrets = secrets_from(os.environ)
    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(Path(log_file).open("a", encoding="utf-8")) if log_file else None

        def log(line: str) -> None:
            line = scrub(line, secrets)
            if handle is not None:
                handle.write(line + "\n")
                handle.flush()
            echo(line)

        try:
            log(f"publish {dist} -> {target.describe()}{' (dry run)' if dry_run else ''}")
            outcomes = publishing.publish(
                Path(dist),
                target,
                log=log,
                recipe=loaded,
                dry_run=dry_run,
                public_key=Path(public_key) if public_key else None,
                expand=_plan_of,
                require_signature=require_signature,
            )
        except Exception as exc:
            if handle is not None:  # the command prints the error itself; the log file keeps it too
                handle.write(scrub(f"error: {exc}", secrets) + "\n")
            if on_refused is not None and isinstance(exc, PublishRefused):
                on_refused(exc, target)
            raise
    if not check_install:
        return PublishRun(outcomes, target)
    resolved, inconclusive = _check_install(outcomes, target, loaded, pypi_url, local_only)
    return PublishRun(outcomes, target, resolved, inconclusive)


#: ``--check-install`` asks about what was published: a dry run publishes nothing
CHECK_INSTALL_DRY_RUN = "--check-install asks pip and uv about the published index: not with --dry-run"


def _check_install(
    outcomes: list[publishing.Outcome],
    target: Target,
    recipe: Recipe | None,
    pypi_url: str,
    local_only: bool,
) -> tuple[list[resolution.Resolution], str | None]:
    """What pip and uv resolve, and why the check is inconclusive (None: it is not): with the public
    index unreachable (or ``local_only``), only the published index is asked."""
    if target.kind == "directory":
        index = (Path(target.location).resolve() / "simple").as_uri() + "/"
    else:
        assert target.simple_url is not None
        index = target.simple_url
    planned = []
    if recipe is not None:
        planned = [
            (recipe.name, p, j.platform_tag) for j in _plan_of(recipe).jobs for p in j.serves or (j.python,)
        ]
    targets = resolution.targets_of([o.wheel for o in outcomes], planned)
    problem = None
    if not local_only and targets:
        problem = resolution.public_index_problem(pypi_url, targets[0].project)
    modes = (resolution.LOCAL,) if local_only or problem else resolution.MODES
    return resolution.check_install(targets, index, pypi_url, modes=modes), problem


def _plan_of(recipe: Recipe) -> Plan:
    """The recipe's plan as ``build`` expands it (runtime images' ceilings read): each job's gate
    configuration is the one its build was gated with."""
    from buildkit.service.plan import plan_of  # the plan stage only with --recipe (start-up time)

    return plan_of(recipe)
