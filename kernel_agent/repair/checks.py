"""How a session checks a version: on the GPU (one worker for the whole session: it restarts itself
after a hang or a lost context), or, without one, the compile-side checks; and the checks recorded
before, by this session or another (`--checks FILE`), which answer for the same kernel without
running it again. That is how a session written on a laptop continues with what a GPU box measured.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sandbox import DirectiveError, GpuWorker, KernelError, Outcome, Settings, Status

from ..check import check
from ..task import Task


def check_key(task: Task, source: str, knobs: dict[str, str], size: str | None) -> str:
    """What identifies a check: the task, the kernel's text, its knob values and the size (all sizes: None)."""
    payload = json.dumps([task.name, source, sorted(knobs.items()), size])
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


class RecordedChecks:
    """Outcomes by check key, read from JSON-lines files; new ones are appended to the first (the
    session's own), one line each, so nothing is lost when the process is killed."""

    def __init__(self, own: Path, others: tuple[Path, ...] = ()):
        self.own = own
        self._outcomes: dict[str, Outcome] = {}
        for path in [*others, own]:
            if path.exists():
                for line in path.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        row = json.loads(line)
                        self._outcomes[row["key"]] = Outcome.model_validate(row["outcome"])

    def get(self, key: str) -> Outcome | None:
        return self._outcomes.get(key)

    def add(self, key: str, outcome: Outcome) -> None:
        if outcome.status is Status.not_run:  # nothing was learnt that a GPU would not tell better
            return
        self._outcomes[key] = outcome
        self.own.parent.mkdir(parents=True, exist_ok=True)
        with self.own.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "outcome": outcome.model_dump(mode="json")}) + "\n")


class SharedGpu:
    """One GPU worker, started at the first check and shared by the checkers of every task (a session,
    or a whole benchmark); it restarts itself after a hang or a lost context."""

    def __init__(self, device: int = 0, worker: GpuWorker | None = None):
        """`worker`: one already running (its owner closes it; `close` leaves it open)."""
        self.device = device
        self._worker: GpuWorker | None = worker
        self._owned = worker is None

    def worker(self) -> GpuWorker:
        if self._worker is None:
            self._worker = GpuWorker(self.device).__enter__()
        return self._worker

    def close(self) -> None:
        if self._worker is not None and self._owned:
            self._worker.__exit__(None, None, None)
        self._worker = None


class Checker:
    """Checks kernel files of one task: the recorded outcome first, else on the GPU, else compile-only
    (with `emulate`, on the CPU emulator too: a failure found there is a verdict like the GPU's)."""

    def __init__(self, task: Task, recorded: RecordedChecks, gpu: SharedGpu | None, arch: str | None = None,
                 settings: Settings | None = None, include_roots: tuple[Path, ...] = (), emulate: bool = False):
        self.task, self.recorded, self.gpu, self.arch = task, recorded, gpu, arch
        self.settings, self.include_roots, self.emulate = settings, include_roots, emulate

    @property
    def on_gpu(self) -> bool:
        return self.gpu is not None

    def check(self, path: Path, source: str, knobs: dict[str, str], size: str | None = None) -> tuple[Outcome, bool]:
        """The outcome of the kernel file at `path` (whose text is `source`), and whether it was recorded
        before rather than checked now."""
        key = check_key(self.task, source, knobs, size)
        if (known := self.recorded.get(key)) is not None:
            return known, True
        try:
            outcome = check(self.task, path, knobs, arch=self.arch,
                            worker=self.gpu.worker() if self.gpu else None, settings=self.settings,
                            size=size, include_roots=self.include_roots, emulate=self.emulate)
        except (KernelError, DirectiveError) as exc:  # directives or knobs that do not parse: the kernel's fault
            outcome = Outcome(status=Status.compile_error, message=f"the kernel file is not usable: {exc}",
                              log=str(exc))
        self.recorded.add(key, outcome)
        return outcome, False
