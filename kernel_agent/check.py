"""`kagent check`: compile one kernel, run it on every size, compare, time it beside the baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from sandbox import (
    SUSPECT, GpuWorker, LaunchPlanError, Outcome, Program, Request, Settings, Status, ceilings,
    outcome_from_reply, roofline, target_arch,
)

from .kernel import Kernel, load_kernel, program, size_cases, static_resource_problem
from .task import Task

SUSPECT_FRACTION = 1.1  # measured faster than 110% of a measured ceiling: something is off


class BaselineError(RuntimeError):
    """The task's own baseline kernel failed: the task, not the candidate, needs fixing."""


def check(
    task: Task,
    kernel_path: str | Path | None = None,
    knobs: Mapping[str, str] | None = None,
    flags: list[str] | None = None,
    arch: str | None = None,
    worker: GpuWorker | None = None,
    settings: Settings | None = None,
) -> Outcome:
    """Compile (and, given a worker, run and time) a kernel for a task. Never raises for kernel faults."""
    arch = target_arch(arch)
    baseline_path = task.path(task.baseline)
    # a file the user names may include what lies beside it; every kernel, what lies beside the task's
    roots = tuple(dict.fromkeys([*([Path(kernel_path).parent.resolve()] if kernel_path else []),
                                 *task.kernel_folders()]))
    kernel = load_kernel(kernel_path or baseline_path, knobs, flags, include_roots=roots)
    outcome, prog = compile_and_plan("candidate", task, kernel, arch)
    if outcome.status is not Status.ok or worker is None:
        return outcome
    is_baseline = kernel.path.resolve() == baseline_path and not knobs and not flags
    baseline = None if is_baseline else baseline_program(task, arch)
    return run(task, outcome, prog, worker, settings, baseline=baseline, is_baseline=is_baseline)


def baseline_program(task: Task, arch: str) -> Program:
    baseline = load_kernel(task.path(task.baseline), include_roots=task.kernel_folders())
    outcome, prog = compile_and_plan("baseline", task, baseline, arch)
    if prog is None:
        raise BaselineError(f"the task's baseline does not build: {outcome.message}")
    return prog


def run(
    task: Task, compiled: Outcome, prog: Program, worker: GpuWorker, settings: Settings | None = None,
    baseline: Program | None = None, is_baseline: bool = False, with_library: bool = True,
) -> Outcome:
    """Check and time a compiled program in the worker (beside `baseline` and the task's library
    function when given)."""
    request = Request(
        reference=task.function_spec(task.reference),
        library=task.function_spec(task.library) if task.library and with_library else None,
        sizes=size_cases(task), timed_index=0, programs=[prog] + ([baseline] if baseline else []),
        settings=settings or Settings(),
    )
    reply = worker.evaluate(request)
    if reply.get("failed_program") == "baseline":
        raise BaselineError(f"the task's baseline kernel failed: {reply.get('message')}")
    result = outcome_from_reply(reply)
    result.candidate_id, result.arch, result.resources = compiled.candidate_id, compiled.arch, compiled.resources
    if result.status is Status.ok and result.timing:
        if is_baseline:
            result.baseline_timing = result.timing
        add_speed(result, request, worker)
    return result


def compile_and_plan(label: str, task: Task, kernel: Kernel, arch: str):
    """Compile and resolve launches; return (outcome so far, program or None)."""
    compiled = kernel.compile(arch)
    outcome = Outcome(status=Status.ok, candidate_id=compiled.key, arch=arch, log=compiled.log,
                      resources=compiled.resources, message="compiled")
    if not compiled.ok:
        outcome.status = Status.compile_error
        outcome.message = compiled.message
        return outcome, None
    try:
        prog = program(label, task, kernel, compiled)
    except LaunchPlanError as exc:
        outcome.status, outcome.message = Status.launch_error, str(exc)
        return outcome, None
    if problem := static_resource_problem(prog, compiled.resources, arch):
        outcome.status, outcome.message = Status.resource_error, problem
        return outcome, None
    return outcome, prog


def add_speed(result: Outcome, request: Request, worker: GpuWorker) -> None:
    timed = request.sizes[request.timed_index]
    if result.baseline_timing:
        result.speedup = result.baseline_timing.median_ms / result.timing.median_ms
    if result.library_timing:
        result.library_speedup = result.library_timing.median_ms / result.timing.median_ms
    result.roofline = roofline(result.timing, timed.bytes_moved, timed.flops, ceilings(worker))
    fraction = result.roofline.fraction
    if fraction is not None and fraction > SUSPECT_FRACTION:
        result.flags.append(
            f"{SUSPECT} {fraction:.0%} of a measured hardware ceiling; the kernel skips work, or the "
            "task's cost model overstates it")
