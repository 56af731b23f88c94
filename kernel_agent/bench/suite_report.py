"""What `kagent bench` leaves behind: results.json, results.csv, report.md and speedups.png (each
written atomically)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from ..files import write_atomic
from ..plots import TaskBar, speedups_png
from .results import BenchMetrics, InfrastructureError, TaskResult, metrics, metrics_by_level

FORMAT = "kagent-bench/1"
CSV_COLUMNS = ["task", "level", "family", "mode", "kernel", "status", "time_ms", "baseline_ms", "library_ms",
               "speedup", "library_speedup", "roofline_fraction", "suspect", "evaluations", "wall_s", "gpu",
               "replayed", "message"]
SUSPECT_NOTE = "SUSPECT: faster than the roofline"


def write_report(run_dir: Path, results: list[TaskResult], environment: dict, title: str,
                 unfinished: Sequence[str] = (), infrastructure: Sequence[InfrastructureError] = ()) -> None:
    """Write the four report files into `run_dir` (created if needed). `unfinished`: the suite's tasks
    with no result yet (an interrupted bench); the metrics cover the finished ones only. `infrastructure`:
    those of them lost to the cluster (not the kernels' failures; `--resume` runs them again)."""
    run_dir = Path(run_dir)
    m = metrics(results)
    write_atomic(run_dir / "results.json",
                 results_json(results, m, environment, title, unfinished, infrastructure).encode())
    write_atomic(run_dir / "results.csv", results_csv(results).encode())
    write_atomic(run_dir / "report.md",
                 report_markdown(results, m, environment, title, unfinished, infrastructure).encode())
    speedups_png(run_dir / "speedups.png",
                 [TaskBar(r.task, r.speedup, r.library_speedup, r.correct, r.suspect) for r in results], title)


def results_json(results: list[TaskResult], m: BenchMetrics, environment: dict, title: str,
                 unfinished: Sequence[str] = (), infrastructure: Sequence[InfrastructureError] = ()) -> str:
    by_level = {level: lm.model_dump(mode="json") for level, lm in metrics_by_level(results).items()}
    doc = {"format": FORMAT, "title": title, "environment": environment, "metrics": m.model_dump(mode="json"),
           "by_level": by_level, "tasks": [r.record() for r in results], "unfinished": list(unfinished)}
    if infrastructure:  # only then: a bench without any reads as those written before the key existed
        doc["infrastructure_errors"] = [e.model_dump(mode="json") for e in infrastructure]
    return json.dumps(doc, indent=2, allow_nan=False, default=str) + "\n"


def results_csv(results: list[TaskResult]) -> str:
    """One row per task; an empty cell for None, true/false for booleans."""
    def cell(v: object) -> object:
        return "" if v is None else str(v).lower() if isinstance(v, bool) else v

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in results:
        record = r.record()
        writer.writerow([cell(record[c]) for c in CSV_COLUMNS])
    return out.getvalue()


def _x(v: float | None) -> str:
    return f"{v:.2f}x" if v is not None else "-"


def _pct(v: float | None) -> str:
    return f"{v:.1%}" if v is not None else "-"


def _ms(v: float | None) -> str:
    return f"{v:.4f}" if v is not None else "-"


def _cell(text: str, limit: int = 100) -> str:
    """Text safe inside a markdown table cell: one line, pipes escaped, cut to `limit` characters."""
    text = " ".join(str(text).split())
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.replace("|", "\\|")


def metrics_lines(m: BenchMetrics) -> list[str]:
    """The metrics as a two-column markdown table."""
    rows = [("tasks", str(m.tasks)), ("correctness rate", f"{_pct(m.correctness)} ({m.correct} of {m.tasks})")]
    rows += [(f"{name} vs baseline", _pct(v)) for name, v in m.fast.items()]
    rows += [("tasks with a library time", str(m.library_tasks))]
    rows += [(f"{name} vs library", _pct(v)) for name, v in m.fast_library.items()]
    rows += [("geomean speedup vs baseline", f"{_x(m.geomean_speedup)} over {m.timed} correct timed tasks"),
             ("geomean speedup vs library", f"{_x(m.geomean_library_speedup)} over {m.library_timed} tasks"),
             ("mean roofline fraction", f"{_pct(m.mean_roofline_fraction)} over {m.roofline_tasks} tasks"),
             ("suspect (faster than the roofline)", ", ".join(m.suspect) or "none")]
    return ["| metric | value |", "| --- | --- |"] + [f"| {k} | {v} |" for k, v in rows]


def level_lines(levels: dict[str, BenchMetrics]) -> list[str]:
    """One markdown row per suite level: its correctness, fast_1, fast_2 and geomean speedups."""
    lines = ["| level | tasks | correct | fast_1 | fast_2 | geomean vs baseline | geomean vs library |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for level, m in levels.items():
        lines.append(f"| {_cell(level)} | {m.tasks} | {_pct(m.correctness)} | {_pct(m.fast.get('fast_1'))} | "
                     f"{_pct(m.fast.get('fast_2'))} | {_x(m.geomean_speedup)} | {_x(m.geomean_library_speedup)} |")
    return lines


def task_lines(results: list[TaskResult]) -> list[str]:
    """One markdown table row per task."""
    lines = ["| task | status | kernel | ms | baseline ms | speedup | library ms | vs library | roofline % | note |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        note = "; ".join(filter(None, [SUSPECT_NOTE if r.suspect else _cell(r.message, 80),
                                       "replayed" if r.replayed else ""]))
        lines.append(f"| {_cell(r.task)} | {r.status.value} | `{_cell(r.kernel, 160)}` | {_ms(r.time_ms)} | "
                     f"{_ms(r.baseline_ms)} | {_x(r.speedup)} | {_ms(r.library_ms)} | {_x(r.library_speedup)} | "
                     f"{_pct(r.roofline_fraction)} | {note} |")
    return lines


def infrastructure_lines(errors: Sequence[InfrastructureError]) -> list[str]:
    """One markdown row per task the infrastructure lost: what happened, where, after how many tries."""
    lines = ["| task | attempts | node | error |", "| --- | --- | --- | --- |"]
    lines += [f"| {_cell(e.task)} | {e.attempts} | {_cell(e.node or '-')} | {_cell(e.error, 160)} |" for e in errors]
    return lines


HOW_TO_READ = (
    "**How to read.** A task is correct when its kernel matched the reference at every size (status `ok`); "
    "a task that was not run counts as not correct. fast_p is the share of all tasks that are correct *and* "
    "more than p times faster than the baseline: fast_0 is the share correct and timed, fast_1 the share "
    "faster than the baseline at all. The library columns divide by the tasks that have a library function "
    "instead. Geometric means are over the correct timed tasks. The roofline fraction is the least time the "
    "task's cost model allows on this GPU divided by the measured time; above 110% (a margin over the measured "
    "ceilings) cannot be real, so such a task is marked SUSPECT (it is still counted above, but left out of "
    "the mean roofline fraction)."
)


def report_markdown(results: list[TaskResult], m: BenchMetrics, environment: dict, title: str,
                    unfinished: Sequence[str] = (), infrastructure: Sequence[InfrastructureError] = ()) -> str:
    lines = [f"# {title}", ""]
    if unfinished:
        lines += [(f"**Partial: {len(unfinished)} of {m.tasks + len(unfinished)} tasks not finished "
                   f"({', '.join(unfinished)}); the metrics cover the {m.tasks} finished ones. "
                   "Continue with `kagent bench --resume RUN`.**"), ""]
    if infrastructure:
        lines += [(f"**Infrastructure errors: {len(infrastructure)} task(s) lost to the cluster, not to their "
                   "kernels (not counted above; `kagent bench --resume RUN` runs them again):**"), "",
                  *infrastructure_lines(infrastructure), ""]
    if m.replayed:
        lines += [(f"**Replayed timings: {m.replayed} of {m.tasks} tasks' timings are replayed recordings, "
                   "not measured now.**"), ""]
    lines += [f"- {k}: {v}" for k, v in environment.items()] + [""]
    lines += ["## Metrics", "", *metrics_lines(m), ""]
    levels = metrics_by_level(results)
    if len(levels) > 1:
        lines += ["## By level", "", *level_lines(levels), ""]
    lines += ["## Failures by class", ""]
    lines += [f"- {status}: {count}" for status, count in m.failures.items()] or ["none"]
    lines += ["", "## Tasks", "", *task_lines(results), "", HOW_TO_READ, ""]
    return "\n".join(lines)
