"""The attempt store: one SQLite file (WAL) shared by all runs, plus each run's own journal.

The journal (`attempts.jsonl` in the run folder, one line per attempt, flushed as written) is what
`--resume` reads; the SQLite store gathers every run's attempts for later runs (failure rules of the
same task) and for analysis.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from sandbox import Outcome, Status

from ..files import write_atomic
from ..seams import Attempt, Candidate, Forecast

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


EXPECTED_COLUMNS = {
    "runs": ["id", "task", "family", "arch", "executor", "strategy", "seed", "budget", "started", "finished",
             "best_candidate", "best_ms", "best_speedup"],
    "attempts": ["run_id", "number", "task", "arch", "executor", "kernel", "knobs", "specialist", "parent", "note",
                 "status", "median_ms", "speedup", "reward", "seconds", "outcome"],
}


class Store:
    """The shared attempt store. It is a convenience, never a gate: a file that is damaged, read-only or
    of another schema is reported once (`problem`, and the `notice` callback) and the run goes on
    without it — its journal alone is what `--resume` needs."""

    def __init__(self, path: Path, notice: Callable[[str], None] = print):
        self.path, self.notice = path, notice
        self.db: sqlite3.Connection | None = None
        self.problem: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(SCHEMA)
            self._check_schema()
        except (sqlite3.Error, OSError) as exc:
            self._give_up(exc)

    def _check_schema(self) -> None:
        assert self.db is not None
        for table, columns in EXPECTED_COLUMNS.items():
            found = [row[1] for row in self.db.execute(f"PRAGMA table_info({table})")]  # names are ours
            if found != columns:
                raise sqlite3.DatabaseError(f"table {table} has columns {found}, not kagent's {columns}")

    def _give_up(self, exc: Exception) -> None:
        """Stop using the store, and say so once."""
        if self.problem is None:
            self.problem = f"{type(exc).__name__}: {exc}"
            self.notice(f"the attempt store {self.path} is unusable ({self.problem}): this run is not recorded "
                        "there and starts without earlier runs' failure rules; move the file away to start a "
                        "new store")
        if self.db is not None:
            with contextlib.suppress(sqlite3.Error):
                self.db.close()
        self.db = None

    def close(self) -> None:
        if self.db is not None:
            self.db.close()

    def _write(self, statements: list[tuple[str, tuple]]) -> None:
        if self.db is None:
            return
        try:
            with self.db:
                for sql, values in statements:
                    self.db.execute(sql, values)
        except sqlite3.Error as exc:
            self._give_up(exc)

    def start_run(self, run_id: str, **fields) -> None:
        self._write([("INSERT OR IGNORE INTO runs (id) VALUES (?)", (run_id,)), *self._run_fields(run_id, fields)])

    def finish_run(self, run_id: str, **fields) -> None:
        self._write(self._run_fields(run_id, fields))

    @staticmethod
    def _run_fields(run_id: str, fields: dict) -> list[tuple[str, tuple]]:
        unknown = set(fields) - set(EXPECTED_COLUMNS["runs"])
        if unknown:
            raise ValueError(f"no runs column {sorted(unknown)}")  # a bug of ours, not the store's
        return [(f"UPDATE runs SET {key} = ? WHERE id = ?", (value, run_id)) for key, value in fields.items()]

    def add(self, run_id: str, task: str, arch: str, executor: str, attempt: Attempt) -> None:
        o = attempt.outcome
        self._write([(
            "INSERT OR REPLACE INTO attempts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, attempt.number, task, arch, executor, attempt.candidate.kernel,
             json.dumps(attempt.candidate.values), attempt.specialist,
             attempt.parent.label() if attempt.parent else None, attempt.note, o.status.value,
             attempt.ms, o.speedup, attempt.reward, attempt.seconds, o.model_dump_json()))])

    def earlier_verdicts(self, task: str, arch: str, executor: str,
                         exclude_run: str) -> list[tuple[Candidate, str, str, float | None]]:
        """(candidate, status, compile log or "", median ms or None) of earlier runs of the same task: the
        knowledge base and the performance predictor start from them."""
        if self.db is None:
            return []
        try:
            rows = self.db.execute(
                "SELECT kernel, knobs, status, CASE WHEN status = 'compile_error' THEN outcome END, median_ms "
                "FROM attempts "
                "WHERE task = ? AND arch = ? AND executor = ? AND run_id != ? AND status != 'not_run'",
                (task, arch, executor, exclude_run)).fetchall()
            return [(Candidate.make(k, json.loads(v)), s, _log(outcome), float(ms) if ms is not None else None)
                    for k, v, s, outcome, ms in rows if s in STATUSES]
        except (sqlite3.Error, ValueError, TypeError, AttributeError) as exc:
            self._give_up(exc)
            return []


def _log(outcome_json: str | None) -> str:
    if not outcome_json:
        return ""
    outcome = json.loads(outcome_json)
    return str(outcome.get("log") or outcome.get("message") or "") if isinstance(outcome, dict) else ""


STATUSES = {s.value for s in Status}


class JournalError(ValueError):
    """A run's journal that cannot be resumed from: the message names the file and the line."""


class Journal:
    """attempts.jsonl of one run: appended and flushed per attempt; read back to resume (and by `kagent
    measure`). Its line format is in kernel_agent/README.md."""

    def __init__(self, path: Path):
        self.path = path

    def read(self) -> list[Attempt]:
        """The attempts journaled so far. Only the last line may be cut short (a crash while writing it):
        it is dropped. A damaged line anywhere else raises JournalError: resuming past it would re-measure
        and renumber everything after it without a word."""
        if not self.path.exists():
            return []
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            raise JournalError(f"{self.path}: cannot read it ({exc.strerror or exc})") from None
        numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
        attempts = []
        for position, (number, line) in enumerate(numbered):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                if position == len(numbered) - 1:
                    break  # the last line, cut short by a crash: everything before it is good
                raise JournalError(f"{self.path}: line {number} is not JSON, and it is not the last line; "
                                   "the journal is damaged: repair or delete that line to resume") from None
            attempts.append(self._attempt(row, number))
        return attempts

    def _attempt(self, row: object, number: int) -> Attempt:
        try:
            if not isinstance(row, dict):
                raise TypeError("not a JSON object")
            return Attempt(
                number=int(row["number"]), candidate=Candidate.make(row["kernel"], row["knobs"]),
                outcome=Outcome.model_validate(row["outcome"]), seconds=float(row["seconds"]),
                specialist=row["specialist"],
                parent=Candidate.make(*row["parent"]) if row["parent"] else None,
                note=str(row["note"]), reward=row["reward"], batch=int(row.get("batch") or 0),
                predicted=Forecast(float(f["ms"]), float(f["p_fail"])) if (f := row.get("predicted")) else None)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise JournalError(f"{self.path}: line {number} is not an attempt record ({type(exc).__name__}: "
                               f"{exc}); repair or delete that line to resume") from None

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
            "note": attempt.note, "reward": attempt.reward, "seconds": attempt.seconds, "batch": attempt.batch,
            "predicted": {"ms": p.ms, "p_fail": p.p_fail} if (p := attempt.predicted) else None,
            "outcome": json.loads(attempt.outcome.model_dump_json()),
        }
        return json.dumps(row) + "\n"
