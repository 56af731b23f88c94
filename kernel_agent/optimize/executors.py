"""Who answers "how does this candidate do?": the GPU (measured now), a recorded sweep (replayed: kagent's
own, or another tuner's cache), or nobody (compiled only, on a machine with neither)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from sandbox import Evaluator, GpuWorker, Outcome, Settings, Status

from ..foreign_cache import LABEL, ForeignCache
from ..recording import load, source_hash
from ..seams import Candidate
from ..task import Task
from .space import Space


class ExecutorError(RuntimeError):
    """The executor cannot serve this task (no GPU, no recording, a stale recording)."""


SEARCH_PRECISION = 0.005  # a searched candidate's timing stops once its median is known to within 0.5%
SEARCH_SETTINGS = Settings(budget_ms=200, precision=SEARCH_PRECISION)  # where no caller says otherwise


class GpuExecutor:
    """Compiles on every core, then checks and times each candidate in the GPU worker. The baseline
    and the library function are timed once at the start; the winner is re-measured beside both.
    Searched candidates are timed until their median is as precise as `settings.precision` asks (or
    the budget is spent); the baseline and the final side-by-side run spend the whole budget."""

    name = "gpu"

    def __init__(self, task: Task, space: Space, worker: GpuWorker, arch: str, settings: Settings):
        self.task, self.space = task, space
        self.evaluator = Evaluator(task.problem(), worker, arch, settings)
        self.full = Evaluator(task.problem(), worker, arch, settings.model_copy(update={"precision": 0.0}))
        self.on_each: Callable[[int, int, Candidate, Outcome], None] | None = None  # (done, of, ...) per kernel run

    def start(self) -> Outcome:
        outcome = self.full.measure_baseline(self.space.build(self.space.default("baseline")))
        if outcome.timing is None:
            raise ExecutorError(f"the task's baseline failed: {outcome.status.value}: {outcome.message}")
        self.evaluator.baseline_timing = self.full.baseline_timing
        return outcome

    def evaluate(self, candidates: list[Candidate]) -> list[tuple[Outcome, float]]:
        kernels = [self.space.build(c) for c in candidates]
        self.evaluator.build(kernels)  # every compile at once, on every core; each run below reads the cache
        results = []
        for done, (candidate, kernel) in enumerate(zip(candidates, kernels), start=1):
            started = time.perf_counter()
            (outcome,) = self.evaluator.evaluate([kernel])
            results.append((outcome, time.perf_counter() - started))
            if self.on_each is not None:
                self.on_each(done, len(kernels), candidate, outcome)
        return results

    def final(self, candidate: Candidate) -> Outcome:
        """The winner beside the baseline and the library function, in one run: the reported figures."""
        (outcome,) = self.full.evaluate([self.space.build(candidate)], beside=self.task.baseline_kernel(),
                                        library=True)
        return outcome


class CompileOnlyExecutor:
    """No GPU and no recording: every candidate is compiled and its launches planned for real (compile,
    launch and resource verdicts need no GPU), and nothing is run, so a kernel that builds is `not_run`.
    `kagent measure RUN` measures such a run's kernels on a GPU afterwards. With `emulate`, each kernel
    that builds is also run on the CPU emulator at the sizes small enough for it: a wrong one fails with
    its evidence (and the model repairs it), a right one stays `not_run` (nothing was timed)."""

    name = "compile-only"

    def __init__(self, task: Task, space: Space, arch: str, emulate: bool = False):
        self.space = space
        self.evaluator = Evaluator(task.problem(), None, arch, emulate=emulate)

    def start(self) -> Outcome:
        outcome = self.final(self.space.default("baseline"))
        if outcome.status is not Status.not_run:
            raise ExecutorError(f"the task's baseline does not build: {outcome.status.value}: {outcome.message}")
        return outcome

    def evaluate(self, candidates: list[Candidate]) -> list[tuple[Outcome, float]]:
        started = time.perf_counter()
        outcomes = self.evaluator.evaluate([self.space.build(c) for c in candidates])  # every core at once
        share = (time.perf_counter() - started) / max(1, len(candidates))
        return [(outcome, share) for outcome in outcomes]

    def final(self, candidate: Candidate) -> Outcome:
        (outcome,) = self.evaluator.evaluate([self.space.build(candidate)])
        return outcome


class ReplayExecutor:
    """Answers from a recorded sweep: deterministic, instant, no GPU. Generic edits were not recorded,
    so the space is the task's declared knobs. A kernel file whose source changed since the sweep is not
    answered from it (compiled for real instead: `not_run` or its compile failure); a changed task or
    baseline is refused."""

    name = "replay"

    def __init__(self, task: Task, space: Space, recording: Path):
        self.task, self.space, self.recording = task, space, recording
        try:
            self.cache = load(recording)
        except (OSError, ValueError) as exc:
            raise ExecutorError(f"cannot read the recorded sweep {recording}: {exc}") from None
        if self.cache.task != task.name or self.cache.executor != "gpu":
            raise ExecutorError(f"{recording} is a {self.cache.executor} sweep of {self.cache.task}, "
                                f"not a GPU sweep of {task.name}")
        if self.cache.task_sha256 != task.fingerprint():
            raise ExecutorError(f"{recording} was recorded for another version of task {task.name} (its sizes, "
                                "buffers, tolerances or reference differ, or the recording predates task "
                                f"hashes): record it again with `kagent sweep {self.cache.task_file} --out "
                                f"{recording}`")
        self.records = {Candidate.make(r.kernel, r.knobs): r for r in self.cache.records}
        self.by_source = {r.source_sha256: r.kernel for r in self.cache.records if r.source_sha256}
        self._hashes: dict[str, str] = {}
        self.stale = [label for label in space.kernels if label in self.cache.kernels()
                      and self._label_of_source(label) is None]  # edited since the sweep: compiled, not run
        if "baseline" in self.stale:
            raise ExecutorError(f"the task's baseline kernel changed since {recording} was recorded (or the "
                                "recording predates source hashes), so no speedup can be replayed: record it "
                                f"again with `kagent sweep {self.cache.task_file} --out {recording}`")
        unchanged = (c for c in space.all() if c.kernel not in self.stale)
        missing = next((c for c in unchanged if self.record_for(c) is None), None)
        if missing is not None:
            raise ExecutorError(
                f"{recording} does not cover the task's space ({missing.label()} is unrecorded, perhaps more): "
                f"the knobs changed or the sweep is incomplete; finish it with `kagent sweep "
                f"{self.cache.task_file} --out {recording}`")

    def _label_of_source(self, label: str) -> str | None:
        """The recorded kernel whose source is this kernel file's source, if any."""
        if label not in self._hashes:
            self._hashes[label] = source_hash(self.space.source_of(label).source)
        return self.by_source.get(self._hashes[label])

    def start(self) -> Outcome:
        return self.records[self.space.default("baseline")].outcome.model_copy(deep=True)

    def record_for(self, candidate: Candidate):
        """The recorded measurement of this candidate, if the recording has one of this very source (also
        when the file has another name: an LLM that writes a recorded kernel again is answered too)."""
        if candidate.kernel not in self.space.kernels:
            return None
        label = self._label_of_source(candidate.kernel)
        return self.records.get(Candidate(label, candidate.knobs)) if label else None

    def evaluate(self, candidates: list[Candidate]) -> list[tuple[Outcome, float]]:
        out = []
        for c in candidates:
            if record := self.record_for(c):
                out.append((record.outcome.model_copy(deep=True), record.seconds or 0.0))
            else:
                out.append((self._not_recorded(c), 0.0))
        return out

    def _not_recorded(self, candidate: Candidate) -> Outcome:
        """Compiled for real (compile and resource verdicts need no GPU); nothing can run it here."""
        (outcome,) = Evaluator(self.task.problem(), None, self.cache.arch).evaluate([self.space.build(candidate)])
        if outcome.status is Status.not_run:
            outcome.message = ("compiled and launches resolved; not run: the recording has no measurement of this "
                               "kernel (measure it with --executor gpu)")
        return outcome

    def final(self, candidate: Candidate) -> Outcome:
        return self.cache.beside_baseline(self.record_for(candidate))



class ForeignReplayExecutor:
    """Answers from another tuner's recording (a kernel_tuner cache): deterministic, instant, no GPU.
    There is no source to compile, so only the recorded configurations are answered: the space is
    theirs (`foreign_space`), and a configuration outside it is refused as a launch error."""

    name = "replay"

    def __init__(self, cache: ForeignCache):
        self.cache = cache
        self.baseline = cache.candidate(cache.default())

    def start(self) -> Outcome:
        return self.cache.outcome(self.baseline)

    def evaluate(self, candidates: list[Candidate]) -> list[tuple[Outcome, float]]:
        return [(self.cache.outcome(c), 0.0) for c in candidates]

    def final(self, candidate: Candidate) -> Outcome:
        outcome, baseline = self.cache.outcome(candidate), self.start()
        outcome.baseline_timing = baseline.timing
        if outcome.timing and baseline.timing:
            outcome.speedup = baseline.timing.median_ms / outcome.timing.median_ms
        return outcome


def foreign_space(cache: ForeignCache) -> Space:
    """A kernel_tuner cache as a space: its parameters as knobs, its recorded configurations as members."""
    return Space.recorded(LABEL, cache.knobs(), [cache.candidate(values) for values in cache.results])
