"""What the model's answers became, per role and repair round, read back from `trajectory.jsonl`: the
report's LLM table, the same whether the proposer is still alive (an optimize run) or not (a run
completed later by `kagent measure`).

Rows are read as the proposer and `kagent measure` write them: a "call" row per model answer (the last
one per call number counts: a resumed run that went another way asks again under the same numbers),
and "result" rows of the kernel an answer became, at its declared knob values; the last result row of
a (call, attempt number) counts (`kagent measure` appends the measured verdict after the compiled one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Tally:
    """What one role's answers became, in one repair round."""

    answers: int = 0
    parsed: int = 0  # became a kernel file of the run
    compiled: int = 0
    correct: int = 0
    faster: int = 0  # than the baseline
    improved_best: int = 0  # the run's best when its batch ended


def read_rows(path: Path) -> list[dict]:
    """The trajectory's rows; a line that is not a JSON object (cut short by a crash) is skipped."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def calls_of(rows: list[dict]) -> dict[int, dict]:
    """The call rows by call number (the last written of each)."""
    return {row["call"]: row for row in rows if row.get("type") == "call" and isinstance(row.get("call"), int)}


def results_of(rows: list[dict]) -> dict[tuple[int, int], dict]:
    """The result rows by (call, attempt number), the last written of each, in the order first written."""
    return {(row["call"], row["number"]): row for row in rows
            if row.get("type") == "result" and isinstance(row.get("call"), int) and isinstance(row.get("number"), int)}


def usage(rows: list[dict]) -> tuple[int, int]:
    """(model answers, tokens they took) as the trajectory holds them."""
    calls = calls_of(rows).values()
    return len(calls), sum(int(c.get("prompt_tokens") or 0) + int(c.get("completion_tokens") or 0) for c in calls)


def tallies_from_trajectory(path: Path, new_bests: set[int]) -> dict[tuple[str, int], Tally]:
    """A Tally per (role, repair round). `new_bests`: the numbers of the attempts that were the run's best
    when their batch ended (an LLM kernel's attempt among them counts as a new best)."""
    rows = read_rows(path)
    results = results_of(rows)
    tallies: dict[tuple[str, int], Tally] = {}
    for call, row in sorted(calls_of(rows).items()):
        tally = tallies.setdefault((str(row.get("role")), int(row.get("round") or 0)), Tally())
        tally.answers += 1
        if not row.get("kernel"):
            continue
        tally.parsed += 1
        result = None
        for (of_call, _), candidate in results.items():  # the last written result of this call's kernel
            if of_call == call and candidate.get("kernel") == row["kernel"]:
                result = candidate
        if result is None:
            continue  # its kernel was never evaluated (the run ended first)
        tally.compiled += result.get("status") != "compile_error"
        if result.get("median_ms") is not None:
            tally.correct += 1
            tally.faster += (result.get("speedup") or 0.0) > 1.0
            tally.improved_best += result.get("number") in new_bests
    return tallies
