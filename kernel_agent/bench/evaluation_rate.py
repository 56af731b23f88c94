"""Evaluations per minute of one search, measured side by side for two source trees (a GPU machine).

Why: a change to the sandbox or the search loop should make a user wait less for the same search. This
runs the same `kagent optimize` (no model, no warm start, an empty compile cache each time) with the
checkout it is started from and with an earlier one (`--before`, e.g. `git archive REV | tar -x -C DIR`),
alternating them, and prints evaluations per minute and their ratio:

    python3 -m kernel_agent.bench.evaluation_rate --before DIR [--task tasks/level1/layernorm.yaml]
        [--budget 40] [--runs 2] [--out DIR]

"in evaluate" counts only the time the executor spent checking and timing candidates (each attempt's
`seconds`); "command" is the whole command's wall time: start-up, the baseline, compiles and the final
side-by-side run included. Absolute times drift between runs and machines; the ratios are the result.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]


@dataclass
class RunFigures:
    tree: str
    attempts: int
    evaluate_s: float
    command_s: float
    median_repetitions: int
    best: float  # the search's best speedup over the baseline, as measured during the search

    @property
    def per_minute_in_evaluate(self) -> float:
        return 60.0 * self.attempts / self.evaluate_s if self.evaluate_s else 0.0

    @property
    def per_minute_command(self) -> float:
        return 60.0 * self.attempts / self.command_s if self.command_s else 0.0


def run_once(tree: Path, label: str, task: str, budget: int, out: Path, extra: list[str]) -> RunFigures:
    """One `kagent optimize` from `tree`'s own sources, with a compile cache of its own, emptied first."""
    cache = Path(tempfile.mkdtemp(prefix=f"kagent-rate-{label}-"))
    env = {**os.environ, "KAGENT_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH", "")])])}
    command = [sys.executable, "-m", "kernel_agent", "optimize", task, "--budget", str(budget), "--executor",
               "gpu", "--no-llm", "--no-warm-start", "--out", str(out), *extra]
    started = time.perf_counter()
    finished = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    shutil.rmtree(cache, ignore_errors=True)
    (out / "command.log").parent.mkdir(parents=True, exist_ok=True)
    (out / "command.log").write_text(finished.stdout + finished.stderr)
    if finished.returncode != 0:
        raise SystemExit(f"{label}: the optimize command failed ({finished.returncode}); see {out / 'command.log'}")
    rows = [json.loads(line) for path in out.glob("*/*/attempts.jsonl") for line in path.read_text().splitlines()
            if line.strip()]
    reps = sorted(r["outcome"]["timing"]["repetitions"] for r in rows if (r["outcome"].get("timing") or {}))
    best = max((r["outcome"].get("speedup") or 0.0 for r in rows if r["outcome"].get("status") == "ok"), default=0.0)
    return RunFigures(label, len(rows), sum(r["seconds"] for r in rows), wall, reps[len(reps) // 2] if reps else 0,
                      best)


def table(runs: list[RunFigures]) -> str:
    lines = ["| tree | attempts | in evaluate (s) | per minute | command (s) | per minute | median reps | best found |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r.tree} | {r.attempts} | {r.evaluate_s:.1f} | {r.per_minute_in_evaluate:.1f} | {r.command_s:.1f} | "
              f"{r.per_minute_command:.1f} | {r.median_repetitions} | {r.best:.2f}x |" for r in runs]
    return "\n".join(lines)


def ratios(runs: list[RunFigures]) -> str:
    def median_of(tree: str, figure: str) -> float:
        return statistics.median(getattr(r, figure) for r in runs if r.tree == tree)

    parts = []
    for figure, name in [("per_minute_in_evaluate", "in evaluate"), ("per_minute_command", "command")]:
        before, after = median_of("before", figure), median_of("after", figure)
        parts.append(f"{name}: {after:.1f} vs {before:.1f} per minute = {after / before:.2f}x")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="an earlier checkout's source tree")
    parser.add_argument("--after", type=Path, default=HERE, help="the later source tree (default: this one)")
    parser.add_argument("--task", default="tasks/level1/layernorm.yaml", help="relative to each tree")
    parser.add_argument("--budget", type=int, default=40, help="evaluations per search")
    parser.add_argument("--runs", type=int, default=2, help="searches per tree, alternated")
    parser.add_argument("--out", type=Path, default=Path("results/evaluation_rate"))
    parser.add_argument("--after-args", default="", help="extra optimize options for this checkout only")
    args = parser.parse_args(argv)
    for option, tree in [("--before", args.before), ("--after", args.after)]:
        if not (tree / "kernel_agent" / "__main__.py").is_file():
            parser.error(f"{option} {tree}: not a kagent source tree (no kernel_agent/__main__.py)")
    runs = []
    for i in range(args.runs):
        for label, tree, extra in [("before", args.before.resolve(), []),
                                   ("after", args.after.resolve(), args.after_args.split())]:
            figures = run_once(tree, label, args.task, args.budget, args.out.resolve() / f"{label}-{i}", extra)
            print(f"{label} run {i + 1}: {figures.attempts} attempts, {figures.per_minute_in_evaluate:.1f}/min in "
                  f"evaluate, {figures.per_minute_command:.1f}/min command; best {figures.best:.2f}x", flush=True)
            runs.append(figures)
    print(table(runs))
    print(ratios(runs))
    (args.out / "evaluation_rate.md").write_text(table(runs) + "\n\n" + ratios(runs) + "\n")


if __name__ == "__main__":
    main()
