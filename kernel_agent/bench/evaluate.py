"""One task of a suite on one lane (a GPU, or the recorded H200 sweeps where there is none): its
kernels as written, a ready-made kernel file, or the best kernel `kagent optimize` finds."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox import GpuWorker, Interrupted, KernelError, Outcome, Settings, Status

from ..check import check
from ..optimize.executors import SEARCH_PRECISION, ReplayExecutor
from ..optimize.session import Hooks, OptimizeOptions, execute, new_run, resume_run
from ..optimize.space import Space
from ..recording import recording_path
from ..task import Task
from .options import BenchConfig
from .results import TaskResult

REPLAY_ARCH = "sm_90"  # the recordings' GPU
Notice = Callable[[str], None]


@dataclass
class Lane:
    """Where tasks run: one GPU (its own worker process), or none (recordings, compile-only)."""

    device: int | None
    settings: Settings
    worker: GpuWorker | None = None
    interrupted: bool = False

    @property
    def name(self) -> str:
        return f"gpu{self.device}" if self.device is not None else "replay"

    def gpu(self) -> GpuWorker:
        if self.interrupted:
            raise Interrupted(f"{self.name} was stopped")
        if self.worker is None:
            assert self.device is not None, "a lane without a GPU has no worker"
            self.worker = GpuWorker(self.device)
            if self.interrupted:  # interrupt() ran while the worker was being made
                self.worker.interrupt()
        return self.worker

    def interrupt(self) -> None:
        """From another thread: kill the worker now; the evaluation in flight raises Interrupted."""
        self.interrupted = True
        if (worker := self.worker) is not None:
            worker.interrupt()

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


def as_written(task: Task, level: str, lane: Lane) -> TaskResult:
    """Each variant with the knob values its file declares (the baseline if there is none); the
    fastest correct one stands for the task."""
    started = time.perf_counter()
    kernels = {label: path for label, path in task.kernel_paths().items() if label != "baseline"}
    if not kernels and task.baseline is None:
        outcome = Outcome(status=Status.not_run, message="no starting kernel: a model writes the first "
                                                         "(--optimize --llm ...), or give kernels with --kernels DIR")
        return task_result(task, level, "as-written", "-", outcome, lane, False, evaluations=0, started=started)
    kernels = kernels or {"baseline": task.baseline_path()}
    outcomes = {label: evaluate_file(task, label, path, lane) for label, path in kernels.items()}
    timed = {label: o.timing.median_ms for label, (o, _) in outcomes.items() if o.status is Status.ok and o.timing}
    label = min(timed, key=timed.__getitem__) if timed else next(iter(outcomes))
    outcome, replayed = outcomes[label]
    return task_result(task, level, "as-written", f"{label} (as written)", outcome, lane, replayed,
                       evaluations=len(outcomes), started=started)


def ready_made(task: Task, level: str, folder: Path, lane: Lane) -> TaskResult:
    """The file FOLDER/TASK.cu (written by another system), checked like any candidate."""
    started = time.perf_counter()
    path = folder / f"{task.name}.cu"
    if not path.is_file():
        outcome = Outcome(status=Status.not_run, message=f"no kernel file {path.name} in {folder}")
        return task_result(task, level, "kernels", str(path), outcome, lane, False, evaluations=0, started=started)
    outcome, replayed = evaluate_file(task, "kernel", path, lane)
    return task_result(task, level, "kernels", str(path), outcome, lane, replayed, started=started)


def optimized(task: Task, task_file: Path, level: str, lane: Lane, folder: Path, bench: BenchConfig, hooks: Hooks,
              llm_url: str | None = None) -> TaskResult:
    """`kagent optimize` within the bench's budget; the winner re-measured beside the baseline and the
    library. A run folder left by an interrupted bench is resumed from its journal."""
    started = time.perf_counter()
    earlier = sorted((folder / task.name).glob("*/run.json"))
    if earlier:
        run = resume_run(folder, str(earlier[0].parent))
        run.config.budget = bench.budget
    else:
        options = OptimizeOptions(task_file=task_file, out=folder, strategy=bench.strategy, seed=bench.seed,
                                  budget=bench.budget, executor="gpu" if lane.device is not None else "auto",
                                  device=lane.device or 0, llm=bench.llm)
        run = new_run(options, hooks.notice)
    worker = lane.gpu() if run.config.executor == "gpu" else None
    # searched as `kagent optimize` searches: candidates timed to the noise, the winner on the whole budget
    searching = lane.settings.model_copy(update={"precision": SEARCH_PRECISION})
    result = execute(run, searching, hooks, worker=worker, llm_url=llm_url)
    best = result.best
    outcome = result.final if result.final is not None else result.baseline
    label = best.candidate.label() if best else "baseline"
    kernel = f"{label} ({run.folder.relative_to(folder.parent)}/best.cu)"
    return task_result(task, level, "optimize", kernel, outcome, lane, run.config.executor == "replay",
                       evaluations=len(result.state.attempts), started=started)


def evaluate_file(task: Task, label: str, path: Path, lane: Lane) -> tuple[Outcome, bool]:
    """(outcome, replayed): measured beside the baseline and the library on a GPU; without one, the
    recorded outcome of the same source, else compiled only (`not_run`)."""
    try:
        if lane.device is not None:
            is_baseline = label == "baseline"
            return check(task, None if is_baseline else path, worker=lane.gpu(), settings=lane.settings), False
        return _replayed(task, label, path)
    except KernelError as exc:  # a file without usable directives cannot be built as the task asks
        return Outcome(status=Status.compile_error, message=str(exc)), False


def _replayed(task: Task, label: str, path: Path) -> tuple[Outcome, bool]:
    recording = recording_path(task.name, None)
    if not recording.exists():
        outcome = check(task, path, arch=REPLAY_ARCH)
        if outcome.status is Status.not_run:
            outcome.message = "compiled; not run: no GPU here and no recorded sweep of this task"
        return outcome, False
    space = Space.of_task(task, generic=False)
    executor = ReplayExecutor(task, space, recording)
    if label not in space.kernels:  # a file from elsewhere: answered if its source was recorded
        space.add_kernel(label, path, generic=False)
    candidate = space.default(label)
    ((outcome, _),) = executor.evaluate([candidate])
    if outcome.status is not Status.ok:
        return outcome, False
    return executor.final(candidate), True


def task_result(task: Task, level: str, mode: str, kernel: str, outcome: Outcome, lane: Lane, replayed: bool,
                started: float, evaluations: int = 1) -> TaskResult:
    ms = lambda timing: timing.median_ms if timing else None  # noqa: E731
    time_ms = ms(outcome.timing)
    fraction = outcome.roofline.fraction if outcome.roofline else None
    return TaskResult(
        task=task.name, level=level, family=task.family, mode=mode, kernel=kernel, status=outcome.status,
        message=outcome.message, time_ms=time_ms, baseline_ms=ms(outcome.baseline_timing),
        library_ms=ms(outcome.library_timing), roofline_ms=fraction * time_ms if fraction and time_ms else None,
        evaluations=evaluations, wall_s=round(time.perf_counter() - started, 2), gpu=lane.device,
        replayed=replayed, has_library=task.library is not None)
