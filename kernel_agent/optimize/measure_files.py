"""What `kagent measure` writes besides the journal and the report: the compile-only originals kept, the
measured verdicts of the model's kernels appended to the trajectory, the attempts in the shared store."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import write_atomic
from ..llm.proposer import redacted
from ..llm.tallies import calls_of, read_rows
from ..seams import Attempt
from ..skeletons import library
from ..skeletons.winners import FOLDER, keep_if_winner
from .store import Store

if TYPE_CHECKING:  # annotations only: measure.py imports this module
    from .loop import RunResult
    from .session import Run

ORIGINAL_JOURNAL = "attempts.compile-only.jsonl"  # the compile-only journal, as the search wrote it
ORIGINAL_REPORT = "report.compile-only.md"


def keep_originals(folder: Path) -> None:
    """Copy the compile-only journal and report aside, the first time only (a later `--again` reads them)."""
    for name, kept in (("attempts.jsonl", ORIGINAL_JOURNAL), ("report.md", ORIGINAL_REPORT)):
        if (folder / name).exists() and not (folder / kept).exists():
            write_atomic(folder / kept, (folder / name).read_bytes())


def log_results(folder: Path, attempts: list[Attempt]) -> None:
    """A "result" row (`"measured": true`) per attempt of a model's kernel (of those given: the kernels'
    declared knob values, as the proposer logs them), under the call that wrote the kernel: readers take
    the last result row of a (call, number), so these replace the compile-only ones."""
    trajectory = folder / "trajectory.jsonl"
    calls = {row["kernel"]: call for call, row in sorted(calls_of(read_rows(trajectory)).items()) if row.get("kernel")}
    rows = [{"type": "result", "call": calls[a.candidate.kernel], "kernel": a.candidate.kernel, "number": a.number,
             "status": a.outcome.status.value, "median_ms": a.ms, "speedup": a.outcome.speedup, "reward": a.reward,
             "message": a.outcome.message, "measured": True}
            for a in attempts if a.candidate.kernel in calls]
    if rows:
        with trajectory.open("a") as f:
            f.write("".join(json.dumps(redacted(row)) + "\n" for row in rows))


def keep_port_winners(run: Run, attempts: list[Attempt]) -> list[str]:
    """The fills of each ported kernel measured correct and faster than the baseline, kept for later
    ports (`skeletons/winners.py`); returns the kernels kept."""
    calls = {row["kernel"]: row for row in calls_of(read_rows(run.folder / "trajectory.jsonl")).values()
             if row.get("kernel") and row.get("fills") and str(row.get("role", "")).startswith("port:")}
    kept = []
    for a in attempts:
        row = calls.get(a.candidate.kernel)
        skeleton = library().get(str(row["role"]).removeprefix("port:")) if row else None
        if row is not None and skeleton is not None and \
                keep_if_winner(run.out / FOLDER, run.task, skeleton, row["fills"], a.outcome, run.config.run_id):
            kept.append(a.candidate.kernel)
    return kept


def record_in_store(run: Run, result: RunResult, notice: Callable[[str], None]) -> None:
    """The attempts, now measured on a GPU, into the shared store (replacing their compile-only rows): the
    next GPU run of the task starts from their verdicts."""
    c, best = run.config, result.best
    store = Store(run.out / "kagent.sqlite", notice)
    try:
        store.start_run(c.run_id, task=c.task, family=c.family, arch=c.arch, executor="gpu", strategy=c.strategy,
                        seed=c.seed, budget=c.budget)
        for attempt in result.state.attempts:
            store.add(c.run_id, c.task, c.arch, "gpu", attempt)
        store.finish_run(c.run_id, finished=time.strftime("%Y-%m-%dT%H:%M:%S"),
                         best_candidate=best.candidate.label() if best else None, best_ms=best.ms if best else None,
                         best_speedup=result.final.speedup if result.final else None)
    finally:
        store.close()
