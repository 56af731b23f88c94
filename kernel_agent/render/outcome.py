"""Show outcomes and reports to a person (rich tables) — the JSON form is the pydantic dump."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sandbox import Outcome, Status, Timing


def _ms(timing: Timing | None) -> str:
    if timing is None:
        return "-"
    return f"{timing.median_ms:.4f} ms  (p10 {timing.p10_ms:.4f}, p90 {timing.p90_ms:.4f}, n={timing.repetitions})"


def show_outcome(outcome: Outcome, console: Console, title: str = "") -> None:
    colour = "green" if outcome.status is Status.ok else "red"
    table = Table(title=title or None, show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("status", f"[{colour}]{outcome.status.value}[/]  {escape(outcome.message)}")
    table.add_row("candidate", escape(f"{outcome.candidate_id}  ({outcome.arch})"))
    for r in outcome.resources:
        table.add_row(
            escape(f"  {r.name}"),
            f"{r.registers} registers, {r.static_smem_bytes} B static smem, {r.stack_bytes} B stack, "
            f"spills {r.spill_stores} B stored / {r.spill_loads} B loaded",
        )
    if outcome.sizes_checked:
        table.add_row("sizes checked", escape("; ".join(outcome.sizes_checked)))
    if m := outcome.mismatch:
        where = f"{m.output} at {m.size} ({m.phase})"
        if m.first_bad_index is not None:
            where += f", first bad index {m.first_bad_index}: expected {m.expected:.6g}, got {m.got:.6g}"
        table.add_row("mismatch", escape(where))
        if m.max_abs_error is not None:
            table.add_row("", f"max abs error {m.max_abs_error:.3g}, max rel error {m.max_rel_error:.3g}, "
                              f"{m.mismatch_fraction:.2%} of elements wrong")
        if m.detail:
            table.add_row("", escape(m.detail))
    if outcome.timing:
        table.add_row("time", _ms(outcome.timing))
        table.add_row("baseline", _ms(outcome.baseline_timing))
        if outcome.speedup is not None:
            table.add_row("speedup", f"{outcome.speedup:.2f}x vs the baseline kernel (same run)")
        if outcome.library_timing:
            table.add_row("library", f"{_ms(outcome.library_timing)}  -> {outcome.library_speedup:.2f}x")
    if roof := outcome.roofline:
        if roof.bandwidth_fraction is not None:
            table.add_row("memory", f"{roof.achieved_gbps:.0f} GB/s = {roof.bandwidth_fraction:.1%} of the "
                                    f"measured copy bandwidth ({roof.bandwidth_gbps:.0f} GB/s)")
        if roof.compute_fraction is not None:
            table.add_row("compute", f"{roof.achieved_gflops:.0f} GFLOP/s = {roof.compute_fraction:.1%} of the "
                                     f"measured fp32 FMA rate ({roof.peak_gflops:.0f} GFLOP/s)")
    if outcome.deterministic is False:
        table.add_row("note", "outputs were not bitwise identical across runs (within tolerance)")
    for flag in outcome.flags:
        table.add_row("[yellow]flag[/]", escape(flag))
    console.print(table)
    if outcome.status is Status.compile_error and outcome.log:
        console.print(outcome.log, markup=False, highlight=False)
