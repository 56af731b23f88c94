"""One row per task: baseline, best recorded variant (re-measured beside the baseline and the library
function in one run on a GPU, or as recorded), speedup, roofline fraction (`kagent suite-table`)."""

from __future__ import annotations

from dataclasses import dataclass

from sandbox import GpuWorker, Outcome, Settings

from .check import check
from .recording import SweepCache, best
from .sweep import candidates
from .task import Task


@dataclass
class Row:
    task: str
    kernel: str
    knobs: dict[str, str]
    outcome: Outcome  # the best variant, with baseline (and library) timings beside it
    recorded: int  # candidates in the sweep
    complete: bool

    def cells(self) -> list[str]:
        o = self.outcome
        ms = lambda t: f"{t.median_ms:.4f}" if t else "-"  # noqa: E731
        fraction = o.roofline.fraction if o.roofline else None
        knobs = " ".join(f"{k}={v}" for k, v in self.knobs.items())
        return [self.task + ("" if self.complete else " (partial sweep)"), ms(o.baseline_timing),
                f"{self.kernel} {knobs}", ms(o.timing), f"{o.speedup:.2f}x" if o.speedup else "-",
                f"{fraction:.1%}" if fraction else "-", ms(o.library_timing),
                f"{o.library_speedup:.2f}x" if o.library_speedup else "-"]


HEADERS = ["task", "baseline ms", "best variant (knobs)", "best ms", "speedup", "roofline", "library ms",
           "vs library"]


def row(task: Task, cache: SweepCache, worker: GpuWorker | None, settings: Settings) -> Row | None:
    top = best(cache)
    if top is None:
        return None
    expected = len(candidates(task))
    if worker is None:
        outcome = cache.beside_baseline(top)
    else:
        outcome = check(task, task.root / top.file, top.knobs, worker=worker, settings=settings)
    return Row(task.name, top.kernel, top.knobs, outcome, len(cache.records), len(cache.records) >= expected)
