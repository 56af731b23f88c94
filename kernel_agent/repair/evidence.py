"""A verdict as a person reads it in a repair session: the failure class and what shows it.

- compile error: the compiler's errors with the source lines around them;
- wrong result: the first wrong elements (index, expected, got), the sizes that passed, the one that failed;
  an out-of-bounds write with the buffer and the bytes; an input the kernel wrote into;
- race: the elements that differ between identical runs;
- launch error, timeout: the size, and the directive lines the launch came from;
- resources: registers, spills and shared memory per entry;
- correct: the time beside the baseline's and the library's, and the share of the roofline.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sandbox import Outcome, Status

from ..llm.context import launch_evidence
from ..llm.prompts import phase_text, source_excerpts

_DIRECTIVE = re.compile(r"^\s*//\s*@kagent\s+(grid|block|smem)\s*:")
NOT_RUN = ("compiled, and its launches planned at every size; not run (no GPU here): results, bounds, races, "
           "hangs and timing are not checked")


def show_verdict(console: Console, outcome: Outcome, source: str, recorded: bool = False,
                 size: str | None = None) -> None:
    colour = {Status.ok: "green", Status.not_run: "yellow"}.get(outcome.status, "red")
    where = f" at {size} only" if size else ""
    note = " (recorded earlier)" if recorded else ""
    message = NOT_RUN if outcome.status is Status.not_run else outcome.message
    console.print(f"[bold {colour}]{outcome.status.value}[/]{escape(where + note)}: {escape(message)}")
    status = outcome.status
    if status is Status.compile_error:
        _compile_error(console, outcome, source)
    elif status is Status.wrong_result or status is Status.nondeterministic:
        _mismatch(console, outcome)
    elif status in (Status.launch_error, Status.timeout, Status.runtime_error):
        _launch(console, outcome, source)
    if status is Status.ok:
        _timing(console, outcome)
    _resources(console, outcome)


def _compile_error(console: Console, outcome: Outcome, source: str) -> None:
    excerpts = source_excerpts(source, outcome.log or outcome.message)
    for excerpt in excerpts:
        console.print(excerpt, markup=False, highlight=False)
    if not excerpts:
        console.print(outcome.log or outcome.message, markup=False, highlight=False)


def _mismatch(console: Console, outcome: Outcome) -> None:
    m = outcome.mismatch
    if outcome.sizes_checked:
        console.print(f"passed at: {escape('; '.join(outcome.sizes_checked))}")
    if m is None:
        return
    console.print(f"failed at: {escape(m.size)}, {escape(m.output)} ({escape(phase_text(m.phase))})")
    if m.first_bad or m.first_bad_index:
        table = Table(box=None, pad_edge=False)
        for column in ("index", "expected", "got"):
            table.add_column(column, justify="right")
        bad: list[tuple[list[int] | None, float | None, float | None]] = \
            [(b.index, b.expected, b.got) for b in m.first_bad] or [(m.first_bad_index, m.expected, m.got)]
        for index, expected, got in bad:
            table.add_row(str(index), _number(expected), _number(got))
        console.print(table)
    if m.max_abs_error is not None and m.mismatch_fraction is not None:
        console.print(f"max abs error {m.max_abs_error:.3g}, max rel error {m.max_rel_error or 0:.3g}, "
                      f"{m.mismatch_fraction:.2%} of elements wrong")
    if m.detail:
        console.print(escape(m.detail))


def _launch(console: Console, outcome: Outcome, source: str) -> None:
    size, lines, limit = launch_evidence(source, outcome.message)
    if not lines:  # a hang or a crash: the size it happened at, and how the kernel is launched
        size = outcome.mismatch.size if outcome.mismatch and outcome.mismatch.size else size
        lines = [f"line {n}: {line.strip()}" for n, line in enumerate(source.splitlines(), start=1)
                 if _DIRECTIVE.match(line)]
    if outcome.sizes_checked:
        console.print(f"passed at: {escape('; '.join(outcome.sizes_checked))}")
    if size != "unknown":
        console.print(f"at size: {escape(size)}")
    for line in lines:
        console.print(f"  {escape(line)}")
    if limit:
        console.print(f"limit: {escape(limit)}")


def _timing(console: Console, outcome: Outcome) -> None:
    if outcome.timing is None:
        return
    parts = [f"{outcome.timing.median_ms:.4f} ms"]
    if outcome.speedup is not None:
        parts.append(f"{outcome.speedup:.2f}x the baseline kernel")
    if outcome.library_speedup is not None:
        parts.append(f"{outcome.library_speedup:.2f}x the library")
    if outcome.roofline is not None and outcome.roofline.fraction is not None:
        parts.append(f"{outcome.roofline.fraction:.0%} of the roofline")
    console.print("time: " + ", ".join(parts) + " (same run)")


def _resources(console: Console, outcome: Outcome) -> None:
    for r in outcome.resources:
        spills = f", spills {r.spill_stores} B stored / {r.spill_loads} B loaded" if r.spill_stores or r.spill_loads \
            else ""
        console.print(escape(f"{r.name}: {r.registers} registers, {r.static_smem_bytes} B static shared{spills}"),
                      style="dim")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"
