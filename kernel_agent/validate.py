"""`kagent tasks validate`: every task file, reference and kernel checked without a GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sandbox import (
    MAX_COMBINATIONS,
    Evaluator,
    Kernel,
    KernelError,
    Status,
    load_kernel,
    probe_reference,
)

from .task import Task, TaskError, load_task

QUICK_PROBE_ELEMENTS = 4_000_000  # --quick probes the reference only at sizes under this (not the timed one)


@dataclass
class TaskReport:
    path: Path
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    kernels: dict[str, str] = field(default_factory=dict)  # label -> "ok (N regs)" or the failure

    @property
    def ok(self) -> bool:
        return not self.errors


def validate_task(path: Path, arch: str = "sm_90", compile_kernels: bool = True, all_knobs: bool = False,
                  quick: bool = False, max_combinations: int = MAX_COMBINATIONS) -> TaskReport:
    report = TaskReport(path=path)
    try:
        task = load_task(path)
    except TaskError as exc:
        report.errors.append(str(exc))
        return report
    for label, kernel_path in task.kernel_paths().items():
        try:
            kernel = load_kernel(kernel_path, include_roots=task.kernel_folders())
        except KernelError as exc:
            report.errors.append(f"{label}: {exc}")
            continue
        if compile_kernels:
            _compile_kernel(report, task, label, kernel, arch, all_knobs, max_combinations)
    _probe(report, task, quick)
    return report


def _probe(report: TaskReport, task: Task, quick: bool) -> None:
    """Run the reference on every size (with --quick, the small ones only) in a child process."""
    cases = task.problem().sizes  # the timed size first
    only = {i for i, c in enumerate(cases) if i > 0 and _elements(c) <= QUICK_PROBE_ELEMENTS} if quick else None
    if only == set():
        report.warnings.append("reference not probed: every check size is over the --quick limit")
        return
    found = probe_reference(task.function_spec(task.reference), cases, timed_index=0, only=only)
    report.errors += found.errors
    report.warnings += found.warnings


def _compile_kernel(report: TaskReport, task: Task, label: str, kernel: Kernel, arch: str, all_knobs: bool,
                    max_combinations: int) -> None:
    count = kernel.combinations
    if all_knobs and count > max_combinations:
        report.errors.append(f"{label} ({kernel.path.name}): {count:,} knob combinations, over the limit of "
                             f"{max_combinations:,}; raise it with --max-combinations {count}")
        return
    kernels = [kernel.with_knobs(knobs) for knobs in kernel.knob_space()] if all_knobs else [kernel]
    registers = []
    for built in Evaluator(task.problem(), None, arch).build(kernels, label):
        if built.outcome.status is not Status.ok:
            report.errors.append(f"{label} ({kernel.path.name}) {built.kernel.knobs}: "
                                 f"{built.outcome.status.value}: {built.outcome.message}")
            return
        registers += [r.registers for r in built.outcome.resources]
    what = f"all {len(kernels)} knob combinations compile" if all_knobs else "compiles"
    report.kernels[label] = f"{what} for {arch} ({min(registers)}-{max(registers)} registers)"


def _elements(case) -> int:
    return sum(b.count for b in case.buffers)
