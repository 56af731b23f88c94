"""`kagent check`: one kernel checked on every size and timed beside the task's baseline and library."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sandbox import Evaluator, GpuWorker, Outcome, Settings, load_kernel

from .task import Task


def check(task: Task, kernel_path: str | Path | None = None, knobs: Mapping[str, str] | None = None,
          flags: list[str] | None = None, arch: str | None = None, worker: GpuWorker | None = None,
          settings: Settings | None = None) -> Outcome:
    """A kernel's Outcome (the baseline's when no file is given). Without a worker: the compile-side
    checks only (`not_run` when they pass). Never raises for the kernel's faults."""
    # a file the user names may include what lies beside it; every kernel, what lies beside the task's
    roots = tuple(dict.fromkeys([*([Path(kernel_path).parent.resolve()] if kernel_path else []),
                                 *task.kernel_folders()]))
    kernel = load_kernel(kernel_path or task.path(task.baseline), knobs, flags, include_roots=roots)
    evaluator = Evaluator(task.problem(), worker, arch, settings)
    is_baseline = kernel.path.resolve() == task.path(task.baseline) and not knobs and not flags
    if worker is not None and is_baseline:
        return evaluator.measure_baseline(kernel)
    (outcome,) = evaluator.evaluate([kernel], beside=None if worker is None else task.baseline_kernel(),
                                    library=True)
    return outcome
