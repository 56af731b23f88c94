"""The attempt store: one SQLite file (WAL) shared by all runs, plus each run's own journal.

The journal (`attempts.jsonl` in the run folder, one line per attempt, flushed as written) is what
`--resume` reads; the SQLite store gathers every run's attempts for later runs (failure rules of the
same task) and for analysis.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from sandbox import Outcome

from ..files import write_atomic
from .space import Candidate
from .strategies import Attempt

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, task TEXT, family TEXT, arch TEXT, executor TEXT, strategy TEXT, seed INTEGER,
    budget INTEGER, started TEXT, finished TEXT, best_candidate TEXT, best_ms REAL, best_speedup REAL
);
CREATE TABLE IF NOT EXISTS attempts (
    run_id TEXT, number INTEGER, task TEXT, arch TEXT, executor TEXT, kernel TEXT, knobs TEXT,
    specialist TEXT, parent TEXT, note TEXT, status TEXT, median_ms REAL, speedup REAL, reward REAL,
    seconds REAL, outcome TEXT, PRIMARY KEY (run_id, number)
);
CREATE INDEX IF NOT EXISTS attempts_by_task ON attempts (task, arch, executor);
"""


class Store:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def start_run(self, run_id: str, **fields) -> None:
        with self.db:
            self.db.execute("INSERT OR IGNORE INTO runs (id) VALUES (?)", (run_id,))
            self._update_run(run_id, fields)

    def finish_run(self, run_id: str, **fields) -> None:
        with self.db:
            self._update_run(run_id, fields)

    def _update_run(self, run_id: str, fields: dict) -> None:
        for key, value in fields.items():
            self.db.execute(f"UPDATE runs SET {key} = ? WHERE id = ?", (value, run_id))  # keys are ours

    def add(self, run_id: str, task: str, arch: str, executor: str, attempt: Attempt) -> None:
        o = attempt.outcome
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO attempts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, attempt.number, task, arch, executor, attempt.candidate.kernel,
                 json.dumps(attempt.candidate.values), attempt.specialist,
                 attempt.parent.label() if attempt.parent else None, attempt.note, o.status.value,
                 attempt.ms, o.speedup, attempt.reward, attempt.seconds, o.model_dump_json()))

    def earlier_statuses(self, task: str, arch: str, executor: str, exclude_run: str) -> list[tuple[Candidate, str]]:
        """(candidate, status) of earlier runs of the same task: the knowledge base starts from them."""
        rows = self.db.execute(
            "SELECT kernel, knobs, status FROM attempts WHERE task = ? AND arch = ? AND executor = ? AND run_id != ?"
            " AND status != 'not_run' AND kernel NOT LIKE 'llm%'",
            (task, arch, executor, exclude_run))
        return [(Candidate.make(k, json.loads(v)), s) for k, v, s in rows]


class Journal:
    """attempts.jsonl of one run: appended and flushed per attempt; read back to resume."""

    def __init__(self, path: Path):
        self.path = path

    def read(self) -> list[Attempt]:
        if not self.path.exists():
            return []
        attempts = []
        for line in self.path.read_text().splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                break  # a line cut short by a crash: everything before it is good
            attempts.append(Attempt(
                number=row["number"], candidate=Candidate.make(row["kernel"], row["knobs"]),
                outcome=Outcome.model_validate(row["outcome"]), seconds=row["seconds"],
                specialist=row["specialist"],
                parent=Candidate.make(*row["parent"]) if row["parent"] else None,
                note=row["note"], reward=row["reward"]))
        return attempts

    def rewrite(self, attempts: list[Attempt]) -> None:
        """Keep only complete lines (after a crash cut the last one short); atomic."""
        write_atomic(self.path, "".join(self._line(a) for a in attempts).encode())

    def append(self, attempt: Attempt) -> None:
        with self.path.open("a") as f:
            f.write(self._line(attempt))
            f.flush()
            os.fsync(f.fileno())

    @staticmethod
    def _line(attempt: Attempt) -> str:
        row = {
            "number": attempt.number, "kernel": attempt.candidate.kernel, "knobs": attempt.candidate.values,
            "status": attempt.outcome.status.value, "median_ms": attempt.ms, "speedup": attempt.outcome.speedup,
            "specialist": attempt.specialist,
            "parent": [attempt.parent.kernel, attempt.parent.values] if attempt.parent else None,
            "note": attempt.note, "reward": attempt.reward, "seconds": attempt.seconds,
            "outcome": json.loads(attempt.outcome.model_dump_json()),
        }
        return json.dumps(row) + "\n"
