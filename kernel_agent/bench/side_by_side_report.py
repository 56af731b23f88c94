"""What `kagent replay-bench --cache` writes: the table (terminal and report.md), the bars' verdicts,
shares.png, and side_by_side.json with every trace (so any figure can be computed again)."""

from __future__ import annotations

import json
from pathlib import Path

from ..files import write_atomic
from ..plots import ShareCurve, shares_png
from .side_by_side import BUDGETS, CacheBench, StrategyResult, quartiles

HEADERS = ("strategy", "tuner", *(f"share at {b}" for b in BUDGETS), "evaluations to 95%", "got there")


def _spread(values: list[float], digits: str) -> str:
    q1, q2, q3 = quartiles(values)
    return f"{q2:{digits}} [{q1:{digits}}-{q3:{digits}}]"


def row_cells(bench: CacheBench, result: StrategyResult) -> list[str]:
    """A strategy's row: median [quartiles] of the share of the optimum at each budget, and of the
    evaluations to the target (a seed that never got there counts as budget + 1, shown as '>budget')."""
    shares = [_spread(result.shares(b, bench.optimum_ms), ".3f") if b <= bench.budget else "-" for b in BUDGETS]
    reached = result.to_target(bench.optimum_ms)
    counts = [float(n) if n is not None else bench.budget + 1.0 for n in reached]
    q1, q2, q3 = quartiles(counts)

    def count(q: float) -> str:
        return f">{bench.budget}" if q > bench.budget else f"{q:g}"

    to_target = f"{count(q2)} [{count(q1)}-{count(q3)}]"
    got = sum(n is not None for n in reached)
    return [result.name, result.tuner, *shares, to_target, f"{got}/{len(reached)}"]


def verdicts(bench: CacheBench) -> list[str]:
    """The issue's bar on this space: the default strategy (agent) needs fewer evaluations to the target,
    median over the seeds, than kernel_tuner's best strategy and than the agent without the predictor."""
    agent = bench.result("agent")
    if agent is None:
        return []
    ours = agent.median_to_target(bench.optimum_ms, bench.budget)
    out = []
    for other in (bench.best_of("kernel_tuner"), bench.result("agent-no-predictor")):
        if other is None:
            continue
        theirs = other.median_to_target(bench.optimum_ms, bench.budget)
        mark = "fewer" if ours < theirs else ("as many" if ours == theirs else "MORE")
        out.append(f"agent {ours:g} vs {other.name} ({other.tuner}) {theirs:g}: {mark}")
    return out


def curves(bench: CacheBench) -> list[ShareCurve]:
    points = sorted({*range(1, min(bench.budget, 10) + 1), *range(10, bench.budget + 1, 5), bench.budget})
    out = []
    for r in bench.results:
        q = [quartiles(r.shares(n, bench.optimum_ms)) for n in points]
        out.append(ShareCurve(f"{r.name} ({'kagent' if r.tuner == 'kagent' else 'KT'})", r.tuner == "kagent", points,
                              [a for a, _, _ in q], [b for _, b, _ in q], [c for _, _, c in q]))
    return out


def markdown(benches: list[CacheBench], kernel_tuner_version: str | None) -> str:
    lines = ["# Search strategies side by side on recorded spaces", "",
             f"kagent's strategies and kernel_tuner's ({kernel_tuner_version or 'not installed'}, simulation mode) "
             "over the same recorded configurations, failures included. Share = optimum / best time so far, "
             "median [quartiles] over the seeds; evaluations to 95% = until the best is within 5% of the optimum "
             "(a seed that never got there counts as the budget + 1).", ""]
    for bench in benches:
        lines += [f"## {bench.name}: {bench.kernel} on {bench.device}", "",
                  f"{bench.size} configurations ({bench.failures} failed), optimum {bench.optimum_ms:.4g} ms, "
                  f"{bench.seeds} seeds, budget {bench.budget}.", "",
                  "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
        lines += ["| " + " | ".join(row_cells(bench, r)) + " |" for r in bench.results]
        lines += ["", *(f"- {v}" for v in verdicts(bench)), ""]
    return "\n".join(lines)


def write(benches: list[CacheBench], out: Path, kernel_tuner_version: str | None) -> list[Path]:
    """report.md, side_by_side.json and (with matplotlib) shares.png under `out`; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    report, data, png = out / "report.md", out / "side_by_side.json", out / "shares.png"
    write_atomic(report, markdown(benches, kernel_tuner_version).encode())
    payload = {"kernel_tuner": kernel_tuner_version, "budgets": list(BUDGETS), "spaces": [
        {"cache": b.name, "device": b.device, "kernel": b.kernel, "configurations": b.size, "failed": b.failures,
         "optimum_ms": b.optimum_ms, "seeds": b.seeds, "budget": b.budget,
         "strategies": [{"name": r.name, "tuner": r.tuner, "traces": r.traces} for r in b.results]}
        for b in benches]}
    write_atomic(data, json.dumps(payload).encode())
    written = [report, data]
    if shares_png(png, [(f"{b.kernel} on {b.device}", curves(b)) for b in benches],
                  "share of the optimum reached, median and quartiles"):
        written.append(png)
    return written
