"""Recorded sweeps: the format (`kagent-sweep/1`, documented in tasks/README.md) and where the
program's own recordings live (`tasks/recordings/h200/`, one file per task). A recording holds the
GPU, driver and compiler versions, the measured ceilings, the baseline's timing, a hash of the task,
and one record per candidate with its knobs, full Outcome and a hash of its kernel file's source."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, Field

from sandbox import Outcome, Status

from .files import write_atomic
from .task import Task, load_suite

RECORDINGS = Path(__file__).resolve().parents[1] / "tasks" / "recordings" / "h200"

FORMAT = "kagent-sweep/1"


class SweepRecord(BaseModel):
    kernel: str = Field(description="'baseline' or the variant's name")
    file: str = Field(description="kernel file, relative to the task file")
    knobs: dict[str, str]
    outcome: Outcome
    seconds: float | None = Field(None, description="wall time of this candidate's evaluation")
    source_sha256: str | None = Field(None, description="source_hash() of the kernel file as it was swept: a "
                                                        "file that changed since is not answered from here")


class SweepCache(BaseModel):
    format: str = FORMAT
    task: str
    task_file: str
    created: str
    executor: str = Field(description="gpu (measured) or compile-only (no timings)")
    arch: str
    compiler: dict[str, str]
    gpu: dict | None = None
    ceilings: dict[str, float] | None = None
    baseline_timing: dict | None = None
    task_sha256: str | None = Field(None, description="Task.fingerprint() when swept: a changed task is not "
                                                      "answered from here")
    records: list[SweepRecord] = Field(default_factory=list)

    def kernels(self) -> set[str]:
        return {r.kernel for r in self.records}

    def done(self) -> set[str]:
        return {r.outcome.candidate_id for r in self.records}

    def beside_baseline(self, record: SweepRecord) -> Outcome:
        """A recorded outcome with the sweep's baseline and library timings attached (each was timed
        once, at the start of the sweep, not beside this candidate)."""
        outcome = record.outcome.model_copy(deep=True)
        baseline = next(r for r in self.records if r.kernel == "baseline")
        outcome.baseline_timing, outcome.library_timing = baseline.outcome.timing, baseline.outcome.library_timing
        if outcome.timing and outcome.library_timing:
            outcome.library_speedup = outcome.library_timing.median_ms / outcome.timing.median_ms
        return outcome


def source_hash(source: str) -> str:
    """What a recording knows a kernel file by: the text that decides what it computes for given knob
    values. Knob declarations are left out (the values arrive as -D macros, and each record names its
    own), so a file that only changed its knob lists is the same."""
    lines = (line.rstrip() for line in source.replace("\r\n", "\n").strip().splitlines())
    kept = "\n".join(line for line in lines if not line.lstrip().startswith("// @kagent knob"))
    return hashlib.sha256(kept.encode()).hexdigest()[:24]


def recording_path(task_name: str, explicit: Path | None = None) -> Path:
    """The recording to replay: the one given, else the program's own for the task."""
    return explicit or RECORDINGS / f"{task_name}.json"


def load(path: Path) -> SweepCache:
    return SweepCache.model_validate_json(path.read_text())


def save(cache: SweepCache, path: Path) -> None:
    write_atomic(path, json.dumps(cache.model_dump(mode="json"), indent=1).encode())


def tasks_with_recordings(path: Path, recordings: Path) -> list[tuple[Path, Task, Path]]:
    """(file, task, its recorded sweep) for every task under `path` that has one in `recordings`."""
    return [(file, task, recordings / f"{task.name}.json") for file, task in load_suite([path])
            if (recordings / f"{task.name}.json").exists()]


def best(cache: SweepCache) -> SweepRecord | None:
    timed = [(r.outcome.timing.median_ms, i, r) for i, r in enumerate(cache.records)
             if r.outcome.status is Status.ok and r.outcome.timing]
    return min(timed, default=(0.0, 0, None))[2]
