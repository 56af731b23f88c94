"""Every model answer kagent kept, with the verdict of the kernel it became: read from the
`trajectory.jsonl` of optimize runs (`run.json` names the task) and the `transcript.jsonl` of repair
sessions (`session.json` names it). A call's verdict is its last `result` row: a compile-only verdict
(`not_run`) is replaced by the GPU's when the run or session was measured later.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JUDGED_NOT = "not_run"


@dataclass(frozen=True)
class Sample:
    task: str
    role: str  # planner, a specialist, port:SKELETON, repair, blind repair, ...
    messages: tuple[tuple[str, str], ...]  # the prompt as sent: (role, content) pairs
    completion: str
    status: str | None  # the kernel's verdict (not_run: never checked); None when the answer gave no kernel
    median_ms: float | None
    speedup: float | None
    origin: str  # FILE#call

    @property
    def prompt(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]

    @property
    def first_ask(self) -> bool:
        """The task's prompt itself (not a re-ask that shows the model its own unusable answer)."""
        return not any(role == "assistant" for role, _ in self.messages)


def read_samples(roots: list[Path]) -> tuple[list[Sample], list[str]]:
    """The samples under `roots` (folders searched recursively, or files), and a line per file skipped."""
    samples: list[Sample] = []
    skipped: list[str] = []
    for root in roots:
        files = [root] if root.is_file() else [*root.rglob("trajectory.jsonl"), *root.rglob("transcript.jsonl")]
        for path in sorted(files):
            task = _task_of(path)
            if task is None:
                skipped.append(f"{path}: no run.json or session.json beside it names the task")
                continue
            try:
                rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                skipped.append(f"{path}: {exc}")
                continue
            samples += _samples(rows, task, path)
    return samples, skipped


def _samples(rows: list[dict[str, Any]], task: str, path: Path) -> list[Sample]:
    verdicts: dict[int, dict[str, Any]] = {}
    for row in rows:
        if row.get("type") == "result":
            verdicts[row["call"]] = row  # the last one wins: a GPU's verdict comes after the compile-only one
    out = []
    for row in rows:
        if row.get("type") != "call" or "text" not in row or "messages" not in row or row.get("role") == "explain":
            continue
        verdict = verdicts.get(row["call"])
        # no verdict: the answer gave no kernel (it says why), or its kernel was never checked
        status = verdict["status"] if verdict else None if row.get("feedback") else JUDGED_NOT
        out.append(Sample(task=task, role=row.get("role", ""),
                          messages=tuple((m["role"], m["content"]) for m in row["messages"]),
                          completion=row["text"], status=status,
                          median_ms=verdict.get("median_ms") if verdict else None,
                          speedup=verdict.get("speedup") if verdict else None, origin=f"{path}#{row['call']}"))
    return out


def _task_of(path: Path) -> str | None:
    """The task a trajectory (run.json) or transcript (the transcript's start row) belongs to."""
    run = path.parent / "run.json"
    if run.is_file():
        try:
            return str(json.loads(run.read_text(encoding="utf-8"))["task"])
        except (OSError, ValueError, KeyError):
            return None
    try:
        with path.open(encoding="utf-8") as f:
            start = json.loads(f.readline())
    except (OSError, ValueError):
        return None
    if start.get("type") != "start":
        return None
    return start.get("task_name") or Path(start.get("task", "")).stem or None  # older sessions: the file's name
