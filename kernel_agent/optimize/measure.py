"""`kagent measure RUN`: a compile-only run's kernels measured on a GPU afterwards (write on a laptop,
measure on the GPU box). The baseline and every attempt that was `not_run` are measured, the rank
rewards recomputed batch by batch as the loop gives them, the winner re-measured beside the baseline
and the library; then the journal, the store, the report and the trajectory are completed.

Nothing is written until every measurement is in, and the compile-only journal and report are kept
beside the new ones (`attempts.compile-only.jsonl`, `report.compile-only.md`): a crash or Ctrl-C
loses nothing, and `--again` measures from them once more. run.json is written last, saying where
and when the run was measured (`measured_on`, `measured_at`).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from sandbox import GpuWorker, KernelError, Outcome, Settings, Status, detect_arch

from ..seams import Attempt, Candidate, Executor, SearchState
from .executors import SEARCH_SETTINGS, ExecutorError, GpuExecutor
from .knowledge import KnowledgeBase
from .loop import RunResult, add_attempt, batches_of, kept_verdicts, learn_earlier, reward_batch
from .measure_files import ORIGINAL_JOURNAL, keep_originals, keep_port_winners, log_results, record_in_store
from .run_report import write_outputs
from .session import Run, run_space
from .space import Space
from .store import Journal, JournalError
from .strategies.agent import AgentStrategy

EachRun = Callable[[int, int, Candidate, Outcome], None]  # (done, of, candidate, outcome), after each kernel's run


class MeasureError(ValueError):
    """A run `kagent measure` will not measure (not compile-only, measured already, damaged): the message
    says why (exit code 2)."""


@dataclass
class Measured:
    """A measured run: its result as the report tells it, and the attempts measured now (baseline first)."""

    result: RunResult
    measured: list[Attempt]


def measure_on_gpu(run: Run, device: int = 0, settings: Settings | None = None, again: bool = False,
                   notice: Callable[[str], None] = print, on_each: EachRun | None = None) -> Measured:
    """`measure_run` on GPU `device`, in a worker of its own. ExecutorError when there is no GPU or it is
    not of the architecture the run compiled for (a run that cannot be measured is refused first)."""
    prepare(run, again)
    arch = detect_arch(device)
    if arch is None:
        raise ExecutorError("no CUDA GPU found on this machine: `kagent measure` runs a compile-only run's kernels "
                            "on a GPU; copy the run folder to a machine with one and measure it there")
    if arch != run.config.arch:
        raise ExecutorError(f"GPU {device} is {arch}, but the run's kernels were compiled for {run.config.arch} "
                            f"(its run.json): measure it on a {run.config.arch} GPU")
    with GpuWorker(device) as worker:
        info = worker.start()

        def executor(space: Space) -> Executor:
            gpu = GpuExecutor(run.task, space, worker, run.config.arch, settings or SEARCH_SETTINGS)
            gpu.on_each = on_each
            return gpu

        return measure_run(run, executor, f"{info['name']} ({info['arch']})", again=again, notice=notice)


def check_measurable(run: Run, again: bool = False) -> None:
    c = run.config
    if c.executor != "compile-only":
        how = {"gpu": "measured on a GPU", "replay": "answered from a recorded sweep"}.get(c.executor, c.executor)
        raise MeasureError(f"run {c.run_id} used the {c.executor} executor: its kernels were {how} already; "
                           "`kagent measure` measures the kernels of a compile-only run")
    if c.measured_on and not again:
        raise MeasureError(f"run {c.run_id} was measured already, on {c.measured_on} ({c.measured_at}): "
                           "pass --again to measure its kernels once more")


def measure_run(run: Run, executor_for: Callable[[Space], Executor], gpu: str, again: bool = False,
                notice: Callable[[str], None] = print) -> Measured:
    """Measure run `run` with the executor `executor_for` makes for its space (a GPU's; a stand-in in
    tests) and complete its folder; `gpu` names the GPU in run.json and the report."""
    started, config = time.monotonic(), run.config
    originals, space = prepare(run, again)
    executor = executor_for(space)
    notice(f"measuring the baseline of {config.task} on {gpu}")
    baseline = executor.start()
    todo = [a for a in originals[1:] if a.outcome.status is Status.not_run]
    notice(f"measuring {len(todo)} attempts that were compiled but not run (all compiled at once, then run one "
           "by one); the others keep their compile-time verdicts")
    answers = executor.evaluate([a.candidate for a in todo]) if todo else []
    fresh = {a.number: replace(a, outcome=outcome, seconds=seconds) for a, (outcome, seconds) in zip(todo, answers)}
    attempts = [replace(originals[0], outcome=baseline, seconds=0.0, reward=None),
                *(replace(fresh.get(a.number, a), reward=None) for a in originals[1:])]
    result, credit = replay(run, space, attempts, baseline)
    best = result.best
    notice("re-measuring the best kernel beside the baseline and the library function" if best else
           "no attempt was measured correct: nothing to re-measure")
    result.final = executor.final(best.candidate) if best else None
    result.evaluated, result.wall_s = len(todo) + 1, time.monotonic() - started
    measured = [attempts[0], *(a for a in attempts if a.number in fresh)]
    # every measurement is in: now the files, run.json last (it says the run is measured)
    keep_originals(run.folder)
    Journal(run.folder / "attempts.jsonl").rewrite(attempts)
    log_results(run.folder, [a for a in measured if a.candidate == space.default(a.candidate.kernel)])
    keep_port_winners(run, [a for a in measured if a.candidate == space.default(a.candidate.kernel)])
    record_in_store(run, result, notice)
    config.measured_on, config.measured_at = gpu, time.strftime("%Y-%m-%dT%H:%M:%S")
    write_outputs(result, space, run.folder, credit)
    config.save(run.folder)
    return Measured(result, measured)


def prepare(run: Run, again: bool = False) -> tuple[list[Attempt], Space]:
    """The run's compile-only attempts and its space; MeasureError if it cannot be measured."""
    check_measurable(run, again)
    originals = original_attempts(run)
    return originals, rebuild_space(run, originals)


def original_attempts(run: Run) -> list[Attempt]:
    """The compile-only run's attempts: its kept journal once measured, else its journal."""
    kept = run.folder / ORIGINAL_JOURNAL
    path = kept if kept.exists() else run.folder / "attempts.jsonl"
    try:
        attempts = Journal(path).read()
    except JournalError as exc:
        raise MeasureError(f"the run's journal is damaged: {exc}") from None
    if not attempts:
        raise MeasureError(f"{path}: no attempt journaled, nothing to measure")
    if [a.number for a in attempts] != list(range(1, len(attempts) + 1)) or attempts[0].candidate.kernel != "baseline":
        raise MeasureError(f"{path}: the journal is damaged (its attempts are not numbered 1, 2, ... from the "
                           "baseline)")
    if any(a.batch == 0 for a in attempts[1:]):  # written before journals kept batches: the configured size
        attempts = [replace(a, batch=(a.number - 2) // run.config.batch + 1 if a.number > 1 else 0)
                    for a in attempts]
    return attempts


def rebuild_space(run: Run, attempts: list[Attempt]) -> Space:
    """The run's space as `session.execute` made it, plus the LLM kernels the journal names (in the order
    they were written) from llm_kernels/; every attempt still to measure must fit it."""
    config = run.config
    space = run_space(run)
    written = {a.candidate.kernel for a in attempts} - set(space.kernels)
    for label in sorted(written, key=lambda s: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s)]):
        path = run.folder / "llm_kernels" / f"{label}.cu"
        if not path.is_file():
            raise MeasureError(f"the journal names kernel {label}, but its file {path} is missing: copy the whole "
                               "run folder, llm_kernels/ included")
        try:
            space.add_kernel(label, path, config.generic)
        except KernelError as exc:
            raise MeasureError(f"{path}: not a usable kernel file ({exc})") from None
    for attempt in attempts:
        if attempt.outcome.status is Status.not_run and not space.contains(attempt.candidate):
            raise MeasureError(f"attempt {attempt.number} ({attempt.candidate.label()}) does not fit the kernels of "
                               f"task {config.task} as they are now: the task changed since the run")
    return space


def replay(run: Run, space: Space, attempts: list[Attempt],
           baseline: Outcome) -> tuple[RunResult, AgentStrategy | None]:
    """The run's state rebuilt batch by batch as the loop builds it: rewards ranked within each batch
    against the best before it and each parent's time, failures counted, the knowledge base taught (from
    the earlier runs' verdicts it started from, then the run's own). For the agent, the credit each
    specialist earned (its `observe`, as after each batch of the run)."""
    config = run.config
    state = SearchState(space, random.Random(config.seed), KnowledgeBase())
    if config.warm_start:
        learn_earlier(state, kept_verdicts(run.folder))
    result = RunResult(config, state, baseline, None, _stopped(run, len(attempts)), 0.0)
    credit = AgentStrategy() if config.strategy == "agent" else None
    for index, batch in enumerate(batches_of(attempts)):
        if index:
            reward_batch(state, batch)
        for attempt in batch:
            add_attempt(state, attempt, result)
        if index and credit is not None:
            credit.observe(state, batch)
    return result, credit


def _stopped(run: Run, attempts: int) -> str:
    if attempts >= run.config.budget:
        return "budget spent"
    return "before the budget (why: `report.compile-only.md`)"
