"""The repair benchmark (`kagent repair-bench`): `--auto K` on every file of a repair corpus, one
session each (OUT/NAME/), and the share repaired within 1, 2 and K rounds per failure class, with the
tokens spent.

Each entry's session is resumed when its folder exists, so the benchmark runs in steps on two
machines: the model's answers written where the model is (a laptop: fixes are compiled, not run),
the pending versions checked where a GPU is (`--no-llm`: check and record, ask nothing), then the
next round on the laptop with the GPU's verdicts as evidence (they travel in each session's checks.jsonl).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from ..llm.client import LLMClient
from .auto import AutoResult, auto_repair
from .checks import Checker, SharedGpu
from .corpus import Entry
from .fixer import HOW_TO_CONFIGURE, Fixer
from .session import RepairSession


class EntryResult(BaseModel):
    name: str
    task: str
    expect: str  # the corpus's failure class
    first: str  # the class the first check gave (not_run: waits for a GPU)
    ending: str  # AutoResult.ending
    rounds: int
    final: str  # the final version's status
    tokens: int
    detail: str = ""

    @property
    def repaired(self) -> bool:
        return self.ending == "repaired"


@dataclass
class BenchOptions:
    rounds: int
    evidence: bool = True
    arch: str | None = None
    emulate: bool = False  # without a GPU: versions that build run on the CPU emulator


def run_entry(entry: Entry, out: Path, gpu: SharedGpu | None, client: LLMClient | None, small: bool,
              options: BenchOptions, say: Callable[[str], None] = lambda text: None) -> EntryResult:
    folder = out / entry.name
    if (folder / "session.json").exists():
        session = RepairSession.resume(folder)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        given = folder / "given.cu"  # the file without its `// @repair` lines
        given.write_text(entry.kernel, encoding="utf-8")
        session = RepairSession.start(folder, entry.task_path, given)
    checker = Checker(session.task, session.recorded, gpu, options.arch, include_roots=(entry.from_path.parent,),
                      emulate=options.emulate)
    fixer = Fixer(session, client, small, options.arch or "sm_90", HOW_TO_CONFIGURE)
    result: AutoResult = auto_repair(session, checker, fixer, options.rounds, options.evidence, say)
    rows = session.transcript()
    firsts = [r["status"] for r in rows if r["type"] == "check" and r["version"] == 1 and r["size"] is None]
    first = next((s for s in firsts if s != "not_run"), firsts[0] if firsts else "-")  # a GPU's verdict, if any
    tokens = sum(r.get("tokens", 0) for r in rows if r["type"] == "round")
    return EntryResult(name=entry.name, task=session.task.name, expect=entry.expect, first=first,
                       ending=result.ending, rounds=result.rounds, final=result.outcome.status.value, tokens=tokens,
                       detail=result.detail)


def summary(results: list[EntryResult], rounds: int) -> list[dict]:
    """One row per failure class (the corpus's), then all: entries, repaired within 1, 2 and K rounds,
    still pending (waiting for a GPU's check, or for a model), asks the model's server failed (the next run
    of the benchmark asks again), and tokens."""
    by_class: dict[str, list[EntryResult]] = defaultdict(list)
    for r in results:
        by_class[r.expect].append(r)
    rows = []
    for name, group in [*sorted(by_class.items()), ("all", results)]:
        counts = {f"within_{k}": sum(r.repaired and r.rounds <= k for r in group) for k in sorted({1, 2, rounds})}
        rows.append({"class": name, "entries": len(group), **counts,
                     "correct_from_start": sum(r.ending == "correct" for r in group),
                     "pending": sum(r.ending in ("pending", "no model") for r in group),
                     "ask_failed": sum(r.ending == "ask failed" for r in group),
                     "tokens": sum(r.tokens for r in group)})
    return rows


def write_report(out: Path, results: list[EntryResult], rounds: int, evidence: bool) -> Path:
    rows = summary(results, rounds)
    (out / "report.json").write_text(json.dumps({"rounds": rounds, "evidence": evidence, "summary": rows,
                                                 "entries": [r.model_dump() for r in results]}, indent=2))
    keys = [k for k in rows[0] if k.startswith("within_")] if rows else []
    lines = [f"# Repair benchmark: --auto {rounds}, {'with the evidence' if evidence else 'without the evidence'}",
             "", "| class | entries | " + " | ".join(f"repaired within {k[7:]}" for k in keys)
             + " | pending | ask failed | tokens |", "|" + " --- |" * (len(keys) + 5)]
    for row in rows:
        shares = " | ".join(f"{row[k]} ({row[k] / row['entries']:.0%})" if row["entries"] else "-" for k in keys)
        counts = f"{row['pending']} | {row['ask_failed']} | {row['tokens']}"
        lines.append(f"| {row['class']} | {row['entries']} | {shares} | {counts} |")
    lines += ["", "| entry | expected | first check | ending | rounds | final | tokens |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r.name} | {r.expect} | {r.first} | {r.ending} | {r.rounds} | {r.final} | {r.tokens} |"
              for r in results]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
