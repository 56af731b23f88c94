"""One benchmark result per task, and the suite's KernelBench-style metrics (correctness, fast_p, geomeans)."""

from __future__ import annotations

import math

from pydantic import BaseModel, Field, field_validator

from sandbox import SUSPECT_FRACTION, Status

DEFAULT_PS = (0.0, 1.0, 1.5, 2.0)


def _ratio(num: float | None, den: float | None) -> float | None:
    """num / den when both are known and positive, else None (never inf or NaN)."""
    return num / den if num is not None and den is not None and num > 0 and den > 0 else None


class TaskResult(BaseModel):
    """What evaluating one task of a suite gave: its status and times (all in ms, medians)."""

    task: str
    level: str = Field(description="the suite folder the task sits in, e.g. level1")
    family: str | None = None
    mode: str = Field(description="as-written | kernels | optimize")
    kernel: str = Field(description="what was evaluated: baseline, a variant with its knobs, or a file path")
    status: Status
    message: str = ""
    time_ms: float | None = None
    baseline_ms: float | None = None
    library_ms: float | None = None
    roofline_ms: float | None = Field(None, description="least time the task's cost model allows on this GPU")
    evaluations: int = 1
    wall_s: float = 0.0
    gpu: int | None = None
    replayed: bool = False
    has_library: bool = Field(False, description="the task has a library function (e.g. torch eager): the task "
                                                 "counts in fast_p vs the library whether or not it was timed")

    @field_validator("time_ms", "baseline_ms", "library_ms", "roofline_ms")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        return v if v is None or math.isfinite(v) else None  # a NaN or inf time is an unknown one

    @property
    def correct(self) -> bool:
        return self.status == Status.ok

    @property
    def speedup(self) -> float | None:
        """baseline_ms / time_ms for a correct, timed kernel."""
        return _ratio(self.baseline_ms, self.time_ms) if self.correct else None

    @property
    def library_speedup(self) -> float | None:
        """library_ms / time_ms for a correct, timed kernel (above 1: faster than the library)."""
        return _ratio(self.library_ms, self.time_ms) if self.correct else None

    @property
    def roofline_fraction(self) -> float | None:
        """roofline_ms / time_ms: the share of the hardware's limit reached (above 1 cannot be real)."""
        return _ratio(self.roofline_ms, self.time_ms) if self.correct else None

    @property
    def suspect(self) -> bool:
        """Faster than the roofline allows (beyond the measurement margin `kagent check` uses): a
        measurement or checking problem, never a win to report."""
        f = self.roofline_fraction
        return f is not None and f > SUSPECT_FRACTION

    def record(self) -> dict:
        """The fields (JSON-ready) plus the derived figures; `has_library` only where set (the records
        written before it existed read the same)."""
        fields = self.model_dump(mode="json", exclude=set() if self.has_library else {"has_library"})
        return {**fields, "speedup": self.speedup, "library_speedup": self.library_speedup,
                "roofline_fraction": self.roofline_fraction, "suspect": self.suspect}


class InfrastructureError(BaseModel):
    """A task the bench could not finish for a reason outside its kernel (a cluster worker or node lost,
    a node without a GPU or NVRTC): kept apart from the results, so that it is never counted as the
    kernel's failure, and `--resume` runs the task again."""

    task: str
    level: str
    error: str = Field(description="what went wrong, as the cluster reported it (exception type: message)")
    attempts: int = Field(description="how many times the task was tried")
    node: str | None = Field(None, description="the last node it ran on, where known")


def fast_name(p: float) -> str:
    """fast_0, fast_1, fast_1.5 ..."""
    return f"fast_{p:g}"


class BenchMetrics(BaseModel):
    """The suite's figures. Rates are fractions of 1; None where their denominator is empty."""

    tasks: int
    correct: int
    correctness: float | None = Field(description="correct / tasks (not_run counts as not correct)")
    fast: dict[str, float | None] = Field(description="fast_p: share of ALL tasks correct with speedup > p")
    library_tasks: int = Field(description="tasks with a library function (or, in older results, a library time)")
    fast_library: dict[str, float | None] = Field(description="fast_p vs the library, over library_tasks: as "
                                                              "KernelBench's fast_p vs torch eager, a task that "
                                                              "failed counts as not fast")
    timed: int = Field(description="correct tasks with a speedup vs the baseline")
    geomean_speedup: float | None
    library_timed: int = Field(description="correct tasks with a speedup vs the library")
    geomean_library_speedup: float | None
    roofline_tasks: int = Field(description="correct, not suspect tasks with a roofline fraction")
    mean_roofline_fraction: float | None
    failures: dict[str, int] = Field(description="status -> count, non-ok statuses only")
    suspect: list[str] = Field(description="tasks faster than the roofline (still counted above)")
    replayed: int = Field(description="tasks whose timings are replayed recordings")


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _geomean(values: list[float]) -> float | None:
    return math.exp(math.fsum(map(math.log, values)) / len(values)) if values else None


def metrics(results: list[TaskResult], ps: tuple[float, ...] = DEFAULT_PS) -> BenchMetrics:
    """The suite's metrics from its per-task results (pure; no result is dropped)."""
    n = len(results)
    speedups = [r.speedup for r in results if r.speedup is not None]
    with_library = [r for r in results if r.has_library or r.library_ms is not None]
    library_speedups = [r.library_speedup for r in with_library if r.library_speedup is not None]
    fractions = [r.roofline_fraction for r in results if r.roofline_fraction is not None and not r.suspect]
    failures = {s.value: c for s in Status if s != Status.ok and (c := sum(r.status == s for r in results))}
    return BenchMetrics(
        tasks=n,
        correct=sum(r.correct for r in results),
        correctness=_share(sum(r.correct for r in results), n),
        fast={fast_name(p): _share(sum(s > p for s in speedups), n) for p in ps},
        library_tasks=len(with_library),
        fast_library={fast_name(p): _share(sum(s > p for s in library_speedups), len(with_library)) for p in ps},
        timed=len(speedups),
        geomean_speedup=_geomean(speedups),
        library_timed=len(library_speedups),
        geomean_library_speedup=_geomean(library_speedups),
        roofline_tasks=len(fractions),
        mean_roofline_fraction=math.fsum(fractions) / len(fractions) if fractions else None,
        failures=failures,
        suspect=[r.task for r in results if r.suspect],
        replayed=sum(r.replayed for r in results),
    )


def metrics_by_level(results: list[TaskResult]) -> dict[str, BenchMetrics]:
    """The metrics of each suite level (KernelBench reports its levels apart), in order of appearance."""
    levels = dict.fromkeys(r.level for r in results)
    return {level: metrics([r for r in results if r.level == level]) for level in levels}
