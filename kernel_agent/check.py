"""`kagent check`: one kernel checked on every size and timed beside the task's baseline and library."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sandbox import Evaluator, GpuWorker, Outcome, Settings, load_kernel

from .task import Task


def check(task: Task, kernel_path: str | Path | None = None, knobs: Mapping[str, str] | None = None,
          flags: list[str] | None = None, arch: str | None = None, worker: GpuWorker | None = None,
          settings: Settings | None = None, size: str | None = None,
          include_roots: tuple[Path, ...] = (), emulate: bool = False) -> Outcome:
    """A kernel's Outcome (the baseline's when no file is given). Without a worker: the compile-side
    checks only (`not_run` when they pass; with `emulate`, run on the CPU emulator too). `size`: check at
    that size only (a label of `size_labels`), untimed: the quick way to reproduce a failure.
    `include_roots`: more folders its #includes may come from. Never raises for the kernel's faults;
    ValueError for an unknown size."""
    # a file the user names may include what lies beside it; every kernel, what lies beside the task's
    roots = tuple(dict.fromkeys([*([Path(kernel_path).parent.resolve()] if kernel_path else []),
                                 *include_roots, *task.kernel_folders()]))
    kernel = load_kernel(kernel_path or task.baseline_path(), knobs, flags, include_roots=roots)
    problem = task.problem()
    if size is not None:
        problem.sizes = [case for case in problem.sizes if case.label == size]
        if not problem.sizes:
            raise ValueError(f"no size {size!r}; the task's sizes: {'; '.join(size_labels(task))}")
        settings = (settings or Settings()).model_copy(update={"time_it": False})
    evaluator = Evaluator(problem, worker, arch, settings, emulate=emulate and worker is None)
    is_baseline = task.baseline is not None and kernel.path.resolve() == task.baseline_path() and not knobs \
        and not flags
    if worker is not None and is_baseline and size is None:
        return evaluator.measure_baseline(kernel)
    timed = worker is not None and size is None
    beside = task.baseline_kernel() if timed and task.baseline is not None else None  # none: timed beside the library
    (outcome,) = evaluator.evaluate([kernel], beside=beside, library=timed)
    return outcome


def size_labels(task: Task) -> list[str]:
    """The task's sizes as checks name them (`rows=3 cols=5`), the timed one first."""
    return [case.label for case in task.problem().sizes]
