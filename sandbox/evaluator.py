"""The one way to judge kernels: compile them (on every core), plan their launches at every size, check
what the GPU allows, then check and time each in the GPU worker. Speedups, the roofline placement and
the suspect flag are set here, once; without a worker, a kernel that builds is `not_run`, or with
`emulate` checked on the CPU emulator first (`emulate.py`: its failures found, nothing timed)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .calibration import ceilings, roofline
from .classify import outcome_from_reply
from .client import GpuWorker
from .compiler import compile_many
from .emulate import emulate as emulate_on_cpu
from .kernel import Kernel
from .launch import LaunchPlanError, over_limits, plan_program
from .outcome import SUSPECT, Outcome, Status, Timing
from .problem import Problem, Program, Request, Settings
from .toolchain import target_arch

SUSPECT_FRACTION = 1.1  # measured faster than 110% of a measured ceiling: something is off
NOT_RUN = "compiled and launches resolved at every size; not run: no GPU here"


class BaselineFailed(RuntimeError):
    """The problem's baseline kernel failed beside a candidate: the task, not the candidate, needs fixing."""


@dataclass
class Built:
    """A kernel after the CPU-side steps: its outcome so far, and its program when it can be run."""

    kernel: Kernel
    outcome: Outcome
    program: Program | None


class Evaluator:
    """Judges kernels for one problem, in `worker` (None: compile-side checks only). Kernels measured
    alone get their speedup against `baseline_timing` (set by `measure_baseline`); kernels measured
    `beside` another get it from that kernel's timing in the same run. Without a worker, `emulate` runs
    each kernel that builds on the CPU emulator at the sizes small enough for it."""

    def __init__(self, problem: Problem, worker: GpuWorker | None = None, arch: str | None = None,
                 settings: Settings | None = None, emulate: bool = False):
        self.problem, self.worker, self.settings = problem, worker, settings or Settings()
        self.emulate = emulate
        self.arch = target_arch(arch)
        self.baseline_timing: Timing | None = None

    def build(self, kernels: list[Kernel], label: str = "candidate") -> list[Built]:
        """Compile all at once (one job per core), then plan each kernel's launches and check its limits."""
        results = compile_many([k.compile_job(self.arch) for k in kernels])
        built = []
        for kernel, compiled in zip(kernels, results):
            outcome = Outcome(status=Status.ok, candidate_id=compiled.key, arch=self.arch, log=compiled.log,
                              resources=compiled.resources, message="compiled")
            program = None
            if not compiled.ok:
                outcome.status, outcome.message = Status.compile_error, compiled.message
            else:
                try:
                    program = plan_program(label, kernel, compiled, self.problem)
                except LaunchPlanError as exc:
                    outcome.status, outcome.message = Status.launch_error, str(exc)
                if program is not None and (problem := over_limits(program, compiled.resources, self.arch)):
                    outcome.status, outcome.message, program = Status.resource_error, problem, None
            built.append(Built(kernel, outcome, program))
        return built

    def evaluate(self, kernels: list[Kernel], beside: Kernel | None = None, library: bool = False) -> list[Outcome]:
        """Each kernel's Outcome, checked on every size and timed: alone, or side by side with `beside`
        (and the library function, if `library`). Raises BaselineFailed if `beside` fails."""
        built = self.build(kernels)
        if self.worker is None:
            if not self.emulate:
                return [_not_run(b.outcome) for b in built]
            with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # each run is a child process
                return list(pool.map(self._emulated, built))
        partner = self._partner(beside) if beside is not None and any(b.program for b in built) else None
        return [self._run(b, partner, library) if b.program else b.outcome for b in built]

    def measure_baseline(self, kernel: Kernel, library: bool = True) -> Outcome:
        """The baseline alone (and the library function): its timing is what later kernels measured
        alone are compared with; its own speedup is 1.0."""
        (outcome,) = self.evaluate([kernel], library=library)
        if outcome.timing is not None:
            self.baseline_timing = outcome.timing
            outcome.baseline_timing, outcome.speedup = outcome.timing, 1.0
        return outcome

    def _partner(self, kernel: Kernel) -> Program:
        (built,) = self.build([kernel], label="baseline")
        if built.program is None:
            raise BaselineFailed(f"the task's baseline does not build: {built.outcome.message}")
        return built.program

    def _run(self, built: Built, partner: Program | None, library: bool) -> Outcome:
        assert self.worker is not None and built.program is not None
        problem = self.problem
        request = Request(reference=problem.reference, library=problem.library if library else None,
                          sizes=problem.sizes, timed_index=0,
                          programs=[built.program, *([partner] if partner else [])], settings=self.settings)
        reply = self.worker.evaluate(request)
        if reply.failed_program == "baseline":
            raise BaselineFailed(f"the task's baseline kernel failed: {reply.message}")
        outcome = outcome_from_reply(reply)
        outcome.candidate_id, outcome.arch = built.outcome.candidate_id, built.outcome.arch
        outcome.resources = built.outcome.resources
        if outcome.status is Status.ok and outcome.timing is not None:
            self._add_speed(outcome)
        return outcome

    def _add_speed(self, outcome: Outcome) -> None:
        assert self.worker is not None and outcome.timing is not None
        baseline = outcome.baseline_timing or self.baseline_timing
        if baseline is not None:
            outcome.speedup = baseline.median_ms / outcome.timing.median_ms
        if outcome.library_timing is not None:
            outcome.library_speedup = outcome.library_timing.median_ms / outcome.timing.median_ms
        timed = self.problem.sizes[0]
        outcome.roofline = roofline(outcome.timing, timed.bytes_moved, timed.flops, ceilings(self.worker))
        fraction = outcome.roofline.fraction
        if fraction is not None and fraction > SUSPECT_FRACTION:
            outcome.flags.append(f"{SUSPECT} {fraction:.0%} of a measured hardware ceiling; the kernel skips "
                                 "work, or the task's cost model overstates it")

    def _emulated(self, built: Built) -> Outcome:
        """A built kernel checked on the CPU emulator: its failure with the evidence, or `not_run` saying
        at which sizes it was correct there."""
        if built.program is None:
            return built.outcome
        verdict = emulate_on_cpu(built.kernel, built.program, self.problem, self.settings.seed)
        outcome = built.outcome
        outcome.status, outcome.message, outcome.mismatch = verdict.status, verdict.message, verdict.mismatch
        outcome.sizes_checked = verdict.sizes_checked
        if verdict.log:
            outcome.log = f"{outcome.log}\n{verdict.log}".strip()
        return outcome


def _not_run(outcome: Outcome) -> Outcome:
    if outcome.status is Status.ok:
        outcome.status, outcome.message = Status.not_run, NOT_RUN
    return outcome
