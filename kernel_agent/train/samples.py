"""Every model answer kagent kept, with the verdict of the kernel it became: read from the
`trajectory.jsonl` of optimize runs (`run.json` names the task) and the `transcript.jsonl` of repair
sessions (its start row names it). A call's verdict is its last `result` row: a compile-only verdict
(`not_run`) is replaced by the GPU's when the run or session was measured later. Each sample keeps what
its answer was read against (the parent's text, or a port repair's earlier fills), so that an answer
to the same prompt can be judged again (`judge.py`).
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
    task_file: str = ""  # the task file as the run or session named it ("" when it did not)
    parent: str | None = None  # the text a file or edit answer applies to (None: unknown, or a port)
    base_fills: tuple[tuple[str, str], ...] = ()  # a port repair's earlier fills, under the answer's

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
            named = _task_of(path)
            if named is None:
                skipped.append(f"{path}: no run.json or session.json beside it names the task")
                continue
            try:
                rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                skipped.append(f"{path}: {exc}")
                continue
            samples += _samples(rows, *named, path)
    return samples, skipped


def _samples(rows: list[dict[str, Any]], task: str, task_file: str, path: Path) -> list[Sample]:
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
                          speedup=verdict.get("speedup") if verdict else None, origin=f"{path}#{row['call']}",
                          task_file=task_file, parent=_parent(row, path),
                          base_fills=tuple(sorted((row.get("base_fills") or {}).items()))))
    return out


def _parent(row: dict[str, Any], path: Path) -> str | None:
    """What the call's answer was read against: the row says it (optimize runs), or it is the session's
    version the call was made from (repair sessions)."""
    if isinstance(row.get("parent_source"), str):
        return row["parent_source"]
    if isinstance(row.get("version"), int):
        version = path.parent / "versions" / f"v{row['version']:03d}.cu"
        try:
            return version.read_text(encoding="utf-8")
        except OSError:
            return None
    return None


def _task_of(path: Path) -> tuple[str, str] | None:
    """The task a trajectory (run.json) or transcript (the transcript's start row) belongs to: its name
    and its file."""
    run = path.parent / "run.json"
    if run.is_file():
        try:
            info = json.loads(run.read_text(encoding="utf-8"))
            return str(info["task"]), str(info.get("task_file", ""))
        except (OSError, ValueError, KeyError):
            return None
    try:
        with path.open(encoding="utf-8") as f:
            start = json.loads(f.readline())
    except (OSError, ValueError):
        return None
    if start.get("type") != "start":
        return None
    name = start.get("task_name") or Path(start.get("task", "")).stem  # older sessions: the file's name
    return (name, str(start.get("task", ""))) if name else None
