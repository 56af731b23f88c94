"""What a run leaves behind: best.cu, report.md, progress.png (attempts.jsonl is written as it goes)."""

from __future__ import annotations

from pathlib import Path

from sandbox import Outcome, Status, Timing

from ..files import write_atomic
from ..llm.tallies import read_rows, tallies_from_trajectory, usage
from ..plots import ProgressPoint, RooflinePoint, progress_png, roofline_png
from ..seams import Attempt
from .loop import RunResult, batches_of
from .predictor import spearman
from .space import Space

NO_PLOTS = "plots need matplotlib: install kagent[plot]"


def write_outputs(result: RunResult, space: Space, run_dir: Path, strategy) -> None:
    """best.cu, the plots (progress.png, roofline.png where the ceilings were measured) and report.md."""
    best = result.best
    if best is not None:
        write_atomic(run_dir / "best.cu", space.self_contained(best.candidate).encode())
    title = f"{result.config.task}: {result.config.strategy} ({result.config.executor})"
    base = result.baseline.timing.median_ms if result.baseline.timing else None
    points = [ProgressPoint(a.number, a.outcome.status.value, base / a.ms if base and a.ms else None)
              for a in result.state.attempts]
    plots = progress_png(run_dir / "progress.png", points, title)
    roofline = plots and _roofline_png(result, run_dir, title)
    write_atomic(run_dir / "report.md", report_markdown(result, strategy, plots, roofline, run_dir).encode())


def _roofline_png(result: RunResult, run_dir: Path, title: str) -> bool:
    """The baseline and the best kernel against the measured ceilings (none on replay without them)."""
    best = result.best
    placed = [(name, o) for name, o in (("baseline", result.baseline),
                                        (f"best: {best.candidate.label()}" if best else "", result.final))
              if o is not None and o.roofline is not None and o.timing is not None]
    ceiling = placed[0][1].roofline if placed else None
    if ceiling is None or not ceiling.bandwidth_gbps or not ceiling.peak_gflops:
        return False
    return roofline_png(run_dir / "roofline.png",
                        [RooflinePoint(name, o.roofline.flops, o.roofline.bytes_moved, o.timing.median_ms)
                         for name, o in placed if o.roofline and o.timing],
                        ceiling.bandwidth_gbps, ceiling.peak_gflops, title)


def _ms(t: Timing | None) -> str:
    return f"{t.median_ms:.4f} ms" if t else "-"


def _roofline(o: Outcome | None) -> str:
    if o is None or o.roofline is None or o.roofline.fraction is None:
        return "-"
    r = o.roofline
    parts = []
    if r.bandwidth_fraction is not None:
        parts.append(f"{r.bandwidth_fraction:.1%} of copy bandwidth ({r.achieved_gbps:.0f} GB/s)")
    if r.compute_fraction is not None:
        parts.append(f"{r.compute_fraction:.1%} of fp32 FMA rate")
    return "; ".join(parts)


def report_markdown(result: RunResult, strategy, plots: bool = True, roofline: bool = False,
                    run_dir: Path | None = None) -> str:
    """The report; `run_dir` is where the LLM section reads the trajectory (none: no LLM section)."""
    c = result.config
    lines = [f"# kagent optimize: {c.task}", ""]
    if c.executor == "replay":
        lines += [f"**Replayed timings**: every figure below comes from the recorded sweep `{c.recording}` "
                  "(measured earlier on the GPU named there), not from a GPU in this run.", ""]
    if c.executor == "compile-only" and c.measured_on:
        lines += [f"**Measured afterwards**: compiled on a machine without a GPU, measured afterwards on "
                  f"{c.measured_on} with `kagent measure` ({c.measured_at}). The search itself chose its kernels "
                  "without timings; its own report is kept as `report.compile-only.md`, its journal as "
                  "`attempts.compile-only.jsonl`.", ""]
    elif c.executor == "compile-only" and c.emulate:
        lines += [f"**Compiled and emulated**: no GPU here, so every kernel was compiled, its launches planned and "
                  "it was run on the CPU emulator at the sizes small enough for it: a failure there is its verdict, "
                  "and a kernel correct there is `not_run`, since nothing was timed. Measure them on a GPU with "
                  f"`kagent measure {c.run_id}`.", ""]
    elif c.executor == "compile-only":
        lines += [f"**Compiled only**: no GPU and no recording here, so every kernel was compiled and its launches "
                  f"planned, and none was run (`not_run`). Measure them on a GPU with `kagent measure {c.run_id}`.",
                  ""]
    executor = f"`{c.executor}`, measured afterwards on {c.measured_on}" if c.measured_on else f"`{c.executor}`"
    timing = f"measured in {result.wall_s:.1f} s" if c.measured_on else f"wall time {result.wall_s:.1f} s"
    lines += [
        f"- run `{c.run_id}`: strategy `{c.strategy}`, seed {c.seed}, budget {c.budget} evaluations "
        f"(batches of {c.batch}), executor {executor}, architecture {c.arch}",
        f"- {len(result.state.attempts)} evaluations ({result.resumed_attempts} from an earlier part of this run), "
        f"stopped: {result.stopped}; {timing}",
        f"- search space: {result.state.space.size} candidates over {len(result.state.space.kernels)} kernel files",
    ]
    lines += _result_section(result)
    lines += ["", "## Failures by class", ""]
    unrun = " (correct on the CPU emulator or not run there; not timed)" if c.emulate else \
        " (compiled, but nothing here could run them: no recording)"
    lines += [f"- {k}: {v}" + (unrun if k == "not_run" else "")
              for k, v in sorted(result.failures.items())] or ["- none"]
    lines += _credit_section(getattr(strategy, "planner", None))
    lines += _llm_section(getattr(strategy, "llm", None), result, run_dir)
    lines += _knowledge_section(result)
    lines += predictor_section(result.state.attempts)
    lines += _attempts_section(result)
    lines += ["", "![progress](progress.png)" if plots else f"({NO_PLOTS})", ""]
    if roofline:
        lines += ["![roofline](roofline.png)", ""]
    return "\n".join(lines)


def _result_section(result: RunResult) -> list[str]:
    c, final, best, base = result.config, result.final, result.best, result.baseline
    lines = ["", "## Result", "", "| kernel | median time | speedup vs baseline | roofline |",
             "| --- | --- | --- | --- |",
             f"| baseline (`{c.task}` as given) | {_ms(base.timing)} | 1.00x | {_roofline(base)} |"]
    if final is None or best is None:
        return [*lines, "| best | no correct kernel found | | |"]
    speed = f"{final.speedup:.2f}x" if final.speedup else "-"
    lines.append(f"| best: `{best.candidate.label()}` | {_ms(final.timing)} | {speed} | {_roofline(final)} |")
    if final.library_timing:
        lib = f"{final.library_speedup:.2f}x faster than the library" if final.library_speedup else ""
        lines.append(f"| library function | {_ms(final.library_timing)} | {lib} | |")
    where = "measured beside the baseline and the library function in one run" \
        if c.executor == "gpu" or c.measured_on else "as recorded in the sweep"
    lines += ["", f"The best kernel's figures are {where}; it is saved as `best.cu` (knob values first, "
                  "so `kagent check TASK best.cu` re-measures it)."]
    return lines + [f"- flag: {flag}" for flag in final.flags]


def _credit_section(planner) -> list[str]:
    if planner is None:
        return []
    lines = ["", "## Credit by specialist", "",
             "| specialist | proposals | mean rank reward | new bests | speedup gained |",
             "| --- | --- | --- | --- | --- |"]
    return lines + [f"| {name} | {credit.proposals} | {credit.mean:+.2f} | {credit.improvements} | "
                    f"{credit.speedup_gained:+.2f} |" for name, credit in planner.credit.items()]


def _knowledge_section(result: RunResult) -> list[str]:
    kb = result.state.kb
    lines = ["", "## Knowledge base: failure rules learned", ""]
    lines += [f"- {r.text()}; pruned {r.pruned} proposals" for r in kb.rules] or ["- none (no value always failed)"]
    if kb.compile_rules:
        lines += ["", "Rules distilled from compile errors (quoted in prompts):", ""]
        lines += [f"- {text} ({hits} times)" for text, hits in kb.compile_rules.most_common()]
    return lines


def predictor_section(attempts: list[Attempt]) -> list[str]:
    """The performance predictor checked against the measurements of the candidates it screened: rank
    correlation of predicted and measured time, and its failure forecasts against what failed."""
    screened = [a for a in attempts if a.predicted is not None and a.outcome.status is not Status.not_run]
    if not screened:
        return []
    timed = [a for a in screened if a.ms is not None]
    failed = [a for a in screened if a.ms is None]
    rho = spearman([a.predicted.ms for a in timed if a.predicted], [a.ms for a in timed if a.ms is not None])
    lines = ["", "## Performance predictor: predicted vs measured", "",
             f"- {len(screened)} of {len(attempts)} attempts were picked by screening; {len(timed)} of them ran "
             f"correctly, {len(failed)} failed; {len(new_bests(attempts) & {a.number for a in screened})} of them "
             "were a new best when measured.",
             f"- Rank correlation (Spearman) of predicted and measured time over those {len(timed)}: "
             + (f"{rho:+.2f}" if rho is not None else "too few to tell") + "."]
    if timed and failed:
        p_failed = _mean([a.predicted.p_fail for a in failed if a.predicted])
        p_ran = _mean([a.predicted.p_fail for a in timed if a.predicted])
        lines.append(f"- Predicted chance of failing: {p_failed:.2f} on average for those that failed, {p_ran:.2f} "
                     "for those that ran.")
    return lines


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _attempts_section(result: RunResult, shown: int = 25) -> list[str]:
    lines = ["", "## Attempts (fastest first, then failures)", "",
             "| # | candidate | specialist | why | status | time | speedup |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    ordered = sorted(result.state.attempts, key=lambda a: (a.ms is None, a.ms or 0, a.number))
    for a in ordered[:shown]:
        speed = f"{a.outcome.speedup:.2f}x" if a.outcome.speedup else "-"
        time = f"{a.ms:.4f} ms" if a.ms is not None else a.outcome.message[:80].replace("|", "/")
        lines.append(f"| {a.number} | `{a.candidate.label()}` | {a.specialist or '-'} | {a.note} | "
                     f"{a.outcome.status.value} | {time} | {speed} |")
    if len(ordered) > shown:
        lines.append(f"| ... | {len(ordered) - shown} more in attempts.jsonl | | | | | |")
    return lines


def _llm_section(llm, result: RunResult, run_dir: Path | None) -> list[str]:
    """The model's use and what its answers became, tallied from `trajectory.jsonl` (`llm` is the live
    proposer during an optimize run; None when `kagent measure` rewrites the report)."""
    settings = result.config.llm
    if settings is None or run_dir is None:
        return []
    trajectory = run_dir / "trajectory.jsonl"
    calls, tokens = (llm.calls, llm.client.tokens_used) if llm is not None else usage(read_rows(trajectory))
    lines = ["", "## LLM", "",
             f"- model `{settings.model}` at {settings.base_url or 'the default OpenAI endpoint'}: "
             f"{calls} calls, {tokens} tokens; prompts and answers in `trajectory.jsonl`"]
    if llm is not None and not llm.enabled:
        lines.append(f"- switched off during the run: {llm.disabled_reason} (the offline specialists carried on)")
    lines += ["", "| role | repair round | answers | parsed | compiled | correct | faster than baseline | new best |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (role, round_), t in sorted(tallies_from_trajectory(trajectory, new_bests(result.state.attempts)).items()):
        lines.append(f"| {role} | {round_} | {t.answers} | {t.parsed} | {t.compiled} | {t.correct} | {t.faster} | "
                     f"{t.improved_best} |")
    return lines


def new_bests(attempts: list[Attempt]) -> set[int]:
    """The numbers of the attempts that were the run's best when their batch ended."""
    found: set[int] = set()
    best: Attempt | None = None
    for batch in batches_of(attempts):
        for attempt in batch:
            if attempt.ms is not None and (best is None or best.ms is None or attempt.ms < best.ms):
                best = attempt
        if best is not None and any(attempt is best for attempt in batch):
            found.add(best.number)
    return found
