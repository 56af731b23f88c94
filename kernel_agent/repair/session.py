"""A repair session on disk: every version of the kernel, every verdict, prompt and answer.

    SESSION/
      session.json       the task, the user's kernel file, the versions (parent, origin, knobs), which is current
      versions/v001.cu   every version as it was checked (v001: the kernel the session started from)
      checks.jsonl       every outcome measured in this session, by check key (`checks.py`): a resumed
                         session on a machine without a GPU reuses what a GPU measured
      transcript.jsonl   one event per line, in order: versions, checks, model calls, decisions, moves

`session.json` is replaced atomically after each change and the other files are appended to, so a
killed session resumes (`kagent repair --resume SESSION`) at its last version. The model's calls and
their results follow the rows of an optimize run's `trajectory.jsonl` ({"type": "call", ...} and
{"type": "result", ...}): what fine-tuning reads from runs, it reads from sessions.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from sandbox import Outcome, Status

from ..files import write_atomic
from ..llm.proposer import redacted
from ..task import Task, TaskError, load_task
from .checks import RecordedChecks
from .versions import History, Version


class SessionError(ValueError):
    """A session folder that cannot be used (missing, damaged) or bad input to start one."""


class SessionFile(BaseModel):
    task: str  # absolute path of the task file (on resume, found again under the working directory if moved)
    kernel: str  # absolute path of the user's kernel file (where `save` writes by default)
    started: str
    history: History


def task_file_of(stored: str, root: Path | None = None) -> Path:
    """The task file a session names: the path it was started with, else the longest tail of that path
    found under `root` (the working directory): a session folder copied to a machine where the
    checkout lies elsewhere (`/work/rb/tasks/level2/x.yaml` read as `tasks/level2/x.yaml`)."""
    path = Path(stored)
    if path.exists():
        return path
    parts = path.parts[1:] if path.is_absolute() else path.parts
    for start in range(len(parts)):
        candidate = (root or Path.cwd()).joinpath(*parts[start:])
        if candidate.is_file():
            return candidate
    return path


class RepairSession:
    def __init__(self, folder: Path, info: SessionFile, task: Task, checks_from: tuple[Path, ...] = ()):
        self.folder, self.info, self.task = folder, info, task
        self.recorded = RecordedChecks(folder / "checks.jsonl", checks_from)
        self.verdicts: dict[int, Outcome] = {}  # version -> its last check at every size
        self.calls = 0

    # -- starting and resuming ----------------------------------------------------------------

    @classmethod
    def start(cls, folder: Path, task_file: Path, kernel_file: Path, knobs: dict[str, str] | None = None,
              checks_from: tuple[Path, ...] = (), call: int | None = None) -> RepairSession:
        """A new session on `kernel_file`; `call`: the model call (logged next) whose answer the file is."""
        try:
            task = load_task(task_file)
        except TaskError as exc:
            raise SessionError(str(exc)) from None
        try:
            source = kernel_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SessionError(f"cannot read the kernel {kernel_file}: {exc}") from None
        if (folder / "session.json").exists():
            raise SessionError(f"{folder} already holds a session: continue it with --resume {folder}")
        (folder / "versions").mkdir(parents=True, exist_ok=True)
        info = SessionFile(task=str(task_file.resolve()), kernel=str(kernel_file.resolve()),
                           started=_now(), history=History())
        session = cls(folder, info, task, checks_from)
        session.log({"type": "start", "task": info.task, "task_name": task.name, "kernel": info.kernel})
        session.add(source, "original", f"from {kernel_file}", knobs or {}, call=call)
        return session

    @classmethod
    def resume(cls, folder: Path, checks_from: tuple[Path, ...] = ()) -> RepairSession:
        path = folder / "session.json"
        if not path.exists():
            raise SessionError(f"{folder} holds no repair session (no session.json)")
        try:
            info = SessionFile.model_validate_json(path.read_text(encoding="utf-8"))
            task_file = task_file_of(info.task)
            task = load_task(task_file)
        except (ValidationError, OSError, TaskError) as exc:
            raise SessionError(f"{path} cannot be read: {exc}") from None
        moved = str(task_file.resolve()) != info.task
        if moved:
            info = info.model_copy(update={"task": str(task_file.resolve())})
        session = cls(folder, info, task, checks_from)
        if moved:
            session._write_info()
        missing = [v.number for v in info.history.versions if not session.path(v.number).exists()]
        if missing:
            raise SessionError(f"{folder}: version files missing: {', '.join(f'v{n:03d}.cu' for n in missing)}")
        for row in session.transcript():
            if row["type"] == "check" and row.get("size") is None:
                session.verdicts[row["version"]] = Outcome.model_validate(row["outcome"])
            session.calls = max(session.calls, row.get("call", 0) if row["type"] == "call" else 0)
        session.log({"type": "resume"})
        return session

    # -- versions ------------------------------------------------------------------------------

    @property
    def history(self) -> History:
        return self.info.history

    @property
    def current(self) -> Version:
        return self.history.head

    def path(self, number: int | None = None) -> Path:
        return self.folder / "versions" / f"v{number or self.history.current:03d}.cu"

    def source(self, number: int | None = None) -> str:
        return self.path(number).read_text(encoding="utf-8")

    def add(self, source: str, origin: str, note: str = "", knobs: dict[str, str] | None = None,
            call: int | None = None) -> Version:
        """A new version made from the current one (by the model's call `call`, if any); it becomes current."""
        version = self.history.add(origin, note, knobs, call)
        self.path(version.number).write_text(source, encoding="utf-8")
        self._write_info()
        self.log({"type": "version", "number": version.number, "parent": version.parent, "origin": origin,
                  "note": note, "knobs": version.knobs, "call": call})
        return version

    def move(self, action: str, number: int | None = None) -> Version | None:
        """undo, redo or goto NUMBER; None when there is nowhere to go."""
        if action == "goto":
            assert number is not None
            version: Version | None = self.history.goto(number)
        else:
            version = self.history.undo() if action == "undo" else self.history.redo()
        if version is not None:
            self._write_info()
            self.log({"type": "move", "action": action, "current": version.number})
        return version

    # -- records ------------------------------------------------------------------------------

    def record_check(self, number: int, size: str | None, outcome: Outcome, recorded: bool) -> None:
        """A check of version `number`; the first full check of a model's version is also its call's result."""
        version = self.history.get(number)
        earlier = self.verdicts.get(number)
        if size is None and version.call is not None and (earlier is None or earlier.status is Status.not_run):
            self.log({"type": "result", "call": version.call, "kernel": f"v{number:03d}",
                      "status": outcome.status.value,
                      "median_ms": outcome.timing.median_ms if outcome.timing else None,
                      "speedup": outcome.speedup, "message": outcome.message})
        if size is None:
            self.verdicts[number] = outcome
        self.log({"type": "check", "version": number, "size": size, "recorded": recorded,
                  "status": outcome.status.value, "message": outcome.message,
                  "outcome": outcome.model_dump(mode="json")})

    def next_call(self) -> int:
        self.calls += 1
        return self.calls

    def log(self, row: dict[str, Any]) -> None:
        with (self.folder / "transcript.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(redacted({**row, "time": _now()})) + "\n")

    def transcript(self) -> list[dict[str, Any]]:
        path = self.folder / "transcript.jsonl"
        if not path.exists():
            return []
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a kill: the ones before it stand
                break
        return rows

    def _write_info(self) -> None:
        write_atomic(self.folder / "session.json", self.info.model_dump_json(indent=2).encode())


def default_folder(out: Path, task: str, kernel: Path) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return out / "repair" / f"{Path(task).stem}-{kernel.stem}-{stamp}"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")

