"""Live progress displays: one line for a sweep, a run or a measure, one bar and a line per GPU for a bench."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator

from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Task as ProgressTask
from rich.text import Text

from sandbox import Outcome

from ..seams import Attempt, Candidate, Executor, Proposer, SearchState

DESCRIPTION = TextColumn("{task.description}", markup=False)  # descriptions hold user text: never markup


@contextlib.contextmanager
def sweep_progress(console: Console, task: str) -> Iterator[Callable]:
    """Yields show(record, number, total), called after each candidate of a sweep."""
    with Progress(DESCRIPTION, BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console) as progress:
        bar = progress.add_task(f"sweeping {task}", total=None)

        def show(record, number: int, total: int) -> None:
            progress.update(bar, completed=number, total=total,
                            description=f"{task}: {record.kernel} {record.knobs} -> {record.outcome.status.value}")

        yield show


class RunLine:
    """The live line of an optimise run: evaluations, best speedup, failures by class, who acted, the
    model's use — or, while a model answer is awaited (minutes on a small local server), that."""

    def __init__(self, progress: Progress, task: str, executor: str, budget: int):
        self.progress, self.task = progress, task
        self.bar = progress.add_task(f"{task}: starting ({executor})", total=budget)
        self.line = task
        self.model: Proposer | None = None

    def on_start(self, executor: Executor, model: Proposer | None) -> None:
        self.model = model
        self.progress.update(self.bar, description=f"{self.task}: timing the baseline ({executor.name})")

    def on_wait(self, text: str | None) -> None:
        self.progress.update(self.bar, description=f"{self.task}: {text}" if text else self.line)

    def on_batch(self, state: SearchState, batch: list[Attempt]) -> None:
        base, best = state.attempts[0].ms, state.best()
        speed = f"{base / best.ms:.2f}x" if base and best and best.ms else "-"
        failures = Counter(a.outcome.status.value for a in state.attempts if a.ms is None)
        failed = " ".join(f"{k}:{v}" for k, v in sorted(failures.items())) or "none"
        acting = ", ".join(sorted({a.specialist for a in batch if a.specialist})) or batch[-1].note
        model = f" | {self.model.usage()}" if self.model is not None else ""
        self.line = f"{self.task}: best {speed} | failures {failed} | acting: {acting}{model}"
        self.progress.update(self.bar, completed=len(state.attempts), description=self.line)


@contextlib.contextmanager
def run_progress(console: Console, task: str, executor: str, budget: int) -> Iterator[RunLine]:
    columns = (DESCRIPTION, BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        yield RunLine(progress, task, executor, budget)


class _SuiteOnly(ProgressColumn):
    """A column shown on the suite's line only (a lane has no count to show)."""

    def __init__(self, column: ProgressColumn):
        super().__init__()
        self.column = column

    def render(self, task: ProgressTask) -> RenderableType:
        return self.column.render(task) if task.total is not None else Text("")


class BenchLines:
    """One bar for the suite; one line per GPU with its current task and how long it has run."""

    def __init__(self, progress: Progress, title: str, total: int, done: int):
        self.progress = progress
        self.bar = progress.add_task(title, total=total, completed=done)
        self.lanes: dict[str, object] = {}
        self.current: dict[str, str] = {}

    def on_event(self, lane: str, text: str) -> None:
        description, task = f"  {lane}: {text}", text.split(" ")[0]
        if lane not in self.lanes:
            self.lanes[lane] = self.progress.add_task(description, total=None)
        elif self.current[lane] != task:  # a new task: its own clock; none once the lane is done
            self.progress.reset(self.lanes[lane], total=None, start=text != "done")  # type: ignore[arg-type]
        self.current[lane] = task
        self.progress.update(self.lanes[lane], description=description)  # type: ignore[arg-type]

    def on_result(self, result) -> None:
        speed = f", {result.speedup:.2f}x" if result.speedup else ""
        self.progress.console.print(f"{result.task}: {result.status.value}{speed} ({result.wall_s:.0f} s)",
                                    markup=False)
        self.progress.advance(self.bar)

    def notice(self, text: str) -> None:
        self.progress.console.print(f"[yellow]{escape(text)}[/]")


@contextlib.contextmanager
def bench_progress(console: Console, title: str, total: int, done: int) -> Iterator[BenchLines]:
    columns = (DESCRIPTION, _SuiteOnly(BarColumn()), _SuiteOnly(MofNCompleteColumn()), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        yield BenchLines(progress, title, total, done)


class MeasureLine:
    """`kagent measure`'s bar over the attempts it runs, a line per attempt above it, and its notices."""

    def __init__(self, progress: Progress, task: str):
        self.progress, self.task = progress, task
        self.bar = progress.add_task(f"{task}: measuring", total=None)

    def notice(self, text: str) -> None:
        self.progress.console.print(text, markup=False)

    def on_each(self, done: int, of: int, candidate: Candidate, outcome: Outcome) -> None:
        timing = f" {outcome.timing.median_ms:.4f} ms" if outcome.timing else ""
        speed = f" ({outcome.speedup:.2f}x)" if outcome.speedup else ""
        self.progress.console.print(f"  {done}/{of} {candidate.label()}: {outcome.status.value}{timing}{speed}",
                                    markup=False)
        self.progress.update(self.bar, completed=done, total=of, description=f"{self.task}: measuring attempts")


@contextlib.contextmanager
def measure_progress(console: Console, task: str) -> Iterator[MeasureLine]:
    columns = (DESCRIPTION, BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:  # the lines above it stay
        yield MeasureLine(progress, task)
