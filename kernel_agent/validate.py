"""`kagent tasks validate`: every task file, reference and kernel checked without a GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sandbox import Status, compile_many, trivial_passes

from .check import compile_and_plan
from .kernel import KernelError, load_kernel, size_cases
from .task import TaskError, load_task

PROBE_MAX_ELEMENTS = 4_000_000  # the reference probe runs at the largest size under this


@dataclass
class TaskReport:
    path: Path
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    kernels: dict[str, str] = field(default_factory=dict)  # label -> "ok (N regs)" or the failure

    @property
    def ok(self) -> bool:
        return not self.errors


def validate_task(path: Path, arch: str = "sm_90", compile_kernels: bool = True, all_knobs: bool = False) -> TaskReport:
    report = TaskReport(path=path)
    try:
        task = load_task(path)
    except TaskError as exc:
        report.errors.append(str(exc))
        return report
    for label, kernel_path in task.kernel_paths().items():
        try:
            kernel = load_kernel(kernel_path)
        except KernelError as exc:
            report.errors.append(f"{label}: {exc}")
            continue
        if compile_kernels:
            _compile_kernel(report, task, label, kernel, arch, all_knobs)
    cases = size_cases(task)
    probe = max((c for c in cases if _elements(c) <= PROBE_MAX_ELEMENTS), key=_elements, default=None)
    if probe is not None:
        try:
            report.warnings += trivial_passes(task.function_spec(task.reference), probe)
        except Exception as exc:  # the reference is the task author's code: report, never crash
            report.errors.append(f"reference: calling it failed: {type(exc).__name__}: {exc}")
    return report


def _compile_kernel(report: TaskReport, task, label: str, kernel, arch: str, all_knobs: bool) -> None:
    combinations = list(kernel.knob_space()) if all_knobs else [kernel.knobs]
    if len(combinations) > 1:  # on every core first; the loop below then reads the cache
        compile_many([kernel.with_knobs(knobs).compile_job(arch) for knobs in combinations])
    registers = []
    for knobs in combinations:
        outcome, _ = compile_and_plan(label, task, kernel.with_knobs(knobs), arch)
        if outcome.status is not Status.ok:
            report.errors.append(f"{label} ({kernel.path.name}) {knobs}: {outcome.status.value}: {outcome.message}")
            return
        registers += [r.registers for r in outcome.resources]
    what = f"all {len(combinations)} knob combinations compile" if all_knobs else "compiles"
    report.kernels[label] = f"{what} for {arch} ({min(registers)}-{max(registers)} registers)"


def _elements(case) -> int:
    return sum(b.count for b in case.buffers)
