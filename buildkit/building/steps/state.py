"""What one job is given (:class:`BuildOptions`), what it gives back (:class:`JobResult`) and the job
being built (:class:`Run`): the state the phases of :mod:`buildkit.building.steps` read and fill in."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from buildkit import manifest
from buildkit.building import Echo, ccache, cibw, requirements
from buildkit.building.gating import Gated
from buildkit.building.progress import Board
from buildkit.building.quarantine import quarantine_root
from buildkit.building.remote_cache import Channel
from buildkit.building.staging import HOST_CA_BUNDLE
from buildkit.compare.baseline import RegressionCheck
from buildkit.gate.config import GateConfig
from buildkit.plan.models import Job
from buildkit.recipe import Recipe

STEP_CIBUILDWHEEL = "cibuildwheel"


@dataclass(frozen=True)
class BuildOptions:
    out_dir: Path
    log_dir: Path
    use_cache: bool = True
    ca_bundle: Path | None = HOST_CA_BUNDLE
    build_isolation: bool = True
    parallel_jobs: int = 2
    force: bool = False  # rebuild even when dist/<job-id>/ holds a wheel built from the same inputs
    source_date_epoch: int | None = None  # None: $SOURCE_DATE_EPOCH, else the source's last commit time
    keep_refused: Path | None = None  # where refused wheels are kept (DIR/<job-id>/); None: <out>/.refused
    quarantine: bool = True  # keep refused wheels at all (verify's throwaway rebuild does not)
    #: an air-gapped host's wheelhouse: the build requirements are resolved from it alone (no index)
    wheelhouse: Path | None = None
    #: download exactly these build requirements (``buildkit verify``: the manifest's lock), by hash
    lock: requirements.Lock | None = None
    #: ccache's remote storage (``--ccache-remote``), as given
    ccache_remote: str | None = None
    #: how the build containers reach it (set by ``build_plan`` while the relay runs)
    cache_channel: Channel | None = None

    @property
    def refused_dir(self) -> Path:
        return quarantine_root(self.out_dir, self.keep_refused)


@dataclass
class JobResult:
    job: str
    status: str  # "passed" | "up-to-date" | "gate-failed" | "build-failed" | "interrupted"
    wheel: Path | None = None
    seconds: float = 0.0
    message: str = ""
    log: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)
    gate: str | None = None  # "PASS" | "FAIL"; None: the gate did not run
    errors: int = 0  # error findings of the gate and of the regression check
    warnings: int = 0
    removed: Path | None = None  # the previous output folder of the job, removed as stale
    waived: int = 0  # findings a recipe waiver accepted
    waivers: tuple[str, ...] = ()  # one line per waiver used (gating.waived_lines)
    refused: Path | None = None  # the refused wheel, kept in the job's quarantine folder
    examine: str | None = None  # the command that reproduces the refusal of ``refused``
    #: the compiles of this build as ccache counted them; None: no cache, or none read
    compiler_cache: ccache.CacheStats | None = None
    #: the exit code of the error that failed the job (13: an index could not be reached); None: none
    exit_code: int | None = None
    not_found: tuple[str, ...] = ()  # what CMake looked for and did not find (cmake_log.not_found)
    host_isa: dict[str, Any] | None = None  # the manifest's host_isa (recipe.sections.host_isa.summary)

    @property
    def manifest(self) -> Path | None:
        return manifest.manifest_path(self.wheel) if self.wheel is not None else None

    def note_verdict(self, gated: Gated) -> None:
        """The gate's counts of ``gated``, the job's wheel."""
        self.gate = "PASS" if gated.passed else "FAIL"
        self.errors, self.warnings = gated.errors, gated.warnings
        self.waived, self.waivers = gated.waived, gated.waivers


@dataclass(frozen=True)
class Output:
    """A wheel the job puts into its output folder: its verdict, the gate configuration it was gated
    with (:func:`~buildkit.gate.config.gate_key`, recorded for ``publish``) and, for a split, what
    it is (manifest ``split``)."""

    wheel: Path
    gated: Gated
    gate: dict[str, Any]
    split: dict[str, Any] | None = None


@dataclass(frozen=True)
class Refusal:
    """A wheel the gate, the regression check or a split output's gate refused: what the ``quarantine``
    phase keeps and the first line(s) of the job's failure (``message``)."""

    wheel: Path
    gated: Gated
    message: str
    regression: RegressionCheck | None = None
    device_target: str | None = None  # a device wheel of the split: gated as one


@dataclass
class Run:
    """One job being built: what :func:`~buildkit.building.job.build_one` was given, where it is
    (``step``, named in errors), and what the phases found so far (each sets its own fields)."""

    recipe: Recipe
    job: Job
    options: BuildOptions
    client: Any
    image: Any
    source: Path
    work: Path
    echo: Echo
    verbose: bool
    result: JobResult
    step: str = "staging the source"
    board: Board | None = None
    key: str | None = None  # the inputs key (stage)
    epoch: int = 0  # SOURCE_DATE_EPOCH (stage)
    with_ca: bool = False  # the staged source holds the CA bundle (stage)
    config: GateConfig = field(
        default_factory=GateConfig
    )  # the recipe's gate configuration for the job (stage)
    lock: requirements.Lock | None = None  # a hermetic build's requirements (requirements)
    wheel: Path | None = None  # the job's wheel (compile, then repair)
    gated: Gated | None = None  # its verdict (gate)
    regression: RegressionCheck | None = None  # (regression)
    outputs: list[Output] = field(default_factory=list)  # the wheels to record (split; else the one)
    refusal: Refusal | None = None  # set by a phase that refuses a wheel (gate, regression, split)
    done: bool = False  # nothing left to do (reuse found the output up to date)

    def tell(self, phase: str) -> None:
        """The job's phase on a terminal's board (off a terminal, cibuildwheel's phases only are printed)."""
        if self.board is not None:
            self.board.phase(self.job.id, phase)

    @property
    def build_id(self) -> str:
        """The value of the build label on every container of this job (the staging folder's name)."""
        return self.work.name.lstrip(".")

    @property
    def dest(self) -> Path:
        return self.options.out_dir / self.job.id

    @property
    def staged(self) -> Path:
        """The staged source (what cibuildwheel copies into its container)."""
        return self.work / "src"

    @property
    def wheelhouse(self) -> Path:
        """A hermetic build's requirements, downloaded into the staged source."""
        return self.staged / ".buildkit" / cibw.WHEELHOUSE_NAME

    def built(self) -> tuple[Path, Gated]:
        """The job's wheel and its verdict, once gated."""
        assert self.wheel is not None and self.gated is not None, "the gate has not run"
        return self.wheel, self.gated


def log_since(log: TextIO, start: int) -> str:
    """What the job's log got after position ``start`` (cibuildwheel's output)."""
    log.flush()
    try:
        with open(log.name, "rb") as fh:
            fh.seek(start)
            return fh.read().decode(errors="replace")
    except (OSError, TypeError, ValueError):
        return ""
