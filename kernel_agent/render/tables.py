"""The summaries a person reads after a command: a run's result, what `kagent measure` changed, a
bench's table and metrics, a validation report, the suite table and the replay-bench table."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..bench.results import TaskResult, metrics
from ..optimize.loop import RunResult
from ..seams import Attempt
from ..validate import TaskReport


def show_run(console: Console, result: RunResult, run_dir: Path) -> None:
    final, best = result.final, result.best
    if result.config.executor == "compile-only":
        built = sum(a.outcome.status.value == "not_run" for a in result.state.attempts)
        console.print(f"[yellow]compiled only:[/] {built} kernels built and planned, none run; measure them on a GPU "
                      f"with `kagent measure {escape(result.config.run_id)}`")
    if result.config.executor == "replay":
        recording = escape(str(result.config.recording))
        console.print(f"[yellow]replayed:[/] timings come from the recorded sweep {recording}")
    table = Table(title=escape(f"{result.config.task}: {len(result.state.attempts)} evaluations, {result.stopped}"))
    for column in ("kernel", "median", "speedup", "roofline"):
        table.add_column(column)
    base = result.baseline
    table.add_row("baseline", f"{base.timing.median_ms:.4f} ms" if base.timing else "-", "1.00x", "")
    if final is not None and final.timing is not None and best is not None:
        fraction = final.roofline.fraction if final.roofline else None
        table.add_row(escape(f"best: {best.candidate.label()}"), f"{final.timing.median_ms:.4f} ms",
                      f"{final.speedup:.2f}x" if final.speedup else "-", f"{fraction:.1%}" if fraction else "-")
        if final.library_timing:
            table.add_row("library", f"{final.library_timing.median_ms:.4f} ms",
                          f"ours {final.library_speedup:.2f}x faster" if final.library_speedup else "", "")
    console.print(table)
    failures = ", ".join(f"{k} {v}" for k, v in sorted(result.failures.items())) or "none"
    kb = result.state.kb
    console.print(f"failures: {failures}; rules learned: {len(kb.rules)} knob, {len(kb.compile_rules)} compile")
    console.print(f"wrote {run_dir}/best.cu, report.md, progress.png, attempts.jsonl", markup=False)


def show_measured(console: Console, result: RunResult, measured: list[Attempt], run_dir: Path) -> None:
    """What `kagent measure` changed: the attempts it measured, how many were correct and faster than the
    baseline, and the best kernel's speedups (re-measured beside the baseline and the library)."""
    final, best, base = result.final, result.best, result.baseline
    table = Table(title=escape(f"{result.config.task}: measured on {result.config.measured_on}"), show_header=False)
    table.add_column(style="bold")
    table.add_column()
    correct = [a for a in measured if a.ms is not None]
    table.add_row("attempts measured", f"{len(measured)} (the baseline included) of {len(result.state.attempts)}")
    table.add_row("correct", str(len(correct)))
    table.add_row("faster than the baseline", str(sum(bool(base.timing and a.ms < base.timing.median_ms)
                                                      for a in correct if a.ms is not None)))
    table.add_row("baseline", f"{base.timing.median_ms:.4f} ms" if base.timing else escape(base.status.value))
    if best is not None and final is not None and final.timing is not None:
        table.add_row("best", escape(f"{best.candidate.label()}: {final.timing.median_ms:.4f} ms"))
        table.add_row("speedup vs baseline", f"{final.speedup:.2f}x" if final.speedup else "-")
        table.add_row("speedup vs library", f"{final.library_speedup:.2f}x" if final.library_speedup else "-")
    else:
        table.add_row("best", "no correct kernel")
    console.print(table)
    failures = ", ".join(f"{k} {v}" for k, v in sorted(result.failures.items())) or "none"
    console.print(f"failures: {failures}", markup=False)
    console.print(f"wrote {run_dir}/attempts.jsonl, report.md, best.cu, progress.png, run.json (the compile-only "
                  "journal and report kept as attempts.compile-only.jsonl, report.compile-only.md)", markup=False)


def show_bench(console: Console, results: list[TaskResult], run_dir: Path) -> None:
    table = Table(title=f"{len(results)} tasks")
    for column in ("task", "status", "ms", "speedup", "vs library", "roofline"):
        table.add_column(column)
    for r in results:
        table.add_row(escape(r.task) + (" (SUSPECT)" if r.suspect else ""), r.status.value,
                      f"{r.time_ms:.4f}" if r.time_ms and r.correct else "-",
                      f"{r.speedup:.2f}x" if r.speedup else "-",
                      f"{r.library_speedup:.2f}x" if r.library_speedup else "-",
                      f"{r.roofline_fraction:.1%}" if r.roofline_fraction else "-")
    console.print(table)
    m = metrics(results)

    def pct(v: float | None) -> str:
        return f"{v:.1%}" if v is not None else "-"

    console.print(f"correct {pct(m.correctness)}; " + ", ".join(f"{k} {pct(v)}" for k, v in m.fast.items())
                  + (f"; geomean speedup {m.geomean_speedup:.2f}x" if m.geomean_speedup else ""))
    if m.replayed:
        console.print(f"[yellow]replayed:[/] {m.replayed} of {m.tasks} tasks' timings are recordings, not measured now")
    console.print(f"wrote {run_dir}/report.md, results.json, results.csv, speedups.png", markup=False)


def show_validation(console: Console, report: TaskReport) -> None:
    mark = "[green]ok[/]" if report.ok else "[red]FAIL[/]"
    console.print(f"{mark} {escape(str(report.path))}")
    for label, text in report.kernels.items():
        console.print(f"    {escape(label)}: {escape(text)}")
    for error in report.errors:
        console.print(f"    [red]{escape(error)}[/]")
    for warning in report.warnings:
        console.print(f"    [yellow]warning:[/] {escape(warning)}")


def suite_table(title: str, headers: Sequence[str], rows: list[list[str]]) -> Table:
    table = Table(title=title)
    for header in headers:
        table.add_column(header)
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def replay_table(seeds: int, rows: list, share: float, early: int) -> Table:
    """One row per task of `kagent replay-bench` (bench.strategies.StrategyRow), with its pass mark."""
    table = Table(title=f"replayed H200 sweeps, median over {seeds} seeds (evaluations include the baseline)")
    for column in ("task", "sweep", f"{share:.0%}", "to 95%: agent", "evo", "random", "agent warm",
                   "to best: agent", "evo", "random", "agent warm", f"best at {early}: agent", "evo", "random",
                   "bars"):
        table.add_column(column)
    strategies = ("agent", "evolutionary", "random")
    for name, row in rows:
        ok = row.agent_fast_enough and row.agent_beats_random_early
        table.add_row(escape(name), str(row.sweep_size), f"{share * row.sweep_size:.1f}",
                      *(f"{row.median_to_target(s):g}" for s in strategies), _median(row.warm_to_target),
                      *(f"{row.median_to_best(s):g}" for s in strategies), _median(row.warm_to_best),
                      *(f"{row.median_early(s):.3f}x" for s in strategies),
                      "[green]pass[/]" if ok else "[red]FAIL[/]")
    return table


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):g}" if values else "-"
