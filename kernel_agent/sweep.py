"""`kagent sweep`: every knob combination of a task's kernels, recorded as a replay cache.

The cache is one JSON file (format `kagent-sweep/1`, documented in tasks/README.md): the GPU,
driver and compiler versions, the measured ceilings, the baseline's timing, and one record per
candidate with its knobs and full Outcome. It is rewritten after every candidate, so an
interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, Field

from sandbox import (
    MAX_COMBINATIONS, Evaluator, GpuWorker, Kernel, Outcome, Settings, Status, Timing, ceilings, load_kernel,
    nvrtc_version,
)

from .files import write_atomic
from .task import Task, load_suite

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


def candidates(task: Task, variant: str | None = None,
               max_combinations: int = MAX_COMBINATIONS) -> list[tuple[str, Kernel]]:
    """(label, kernel with knobs chosen) for every combination; the baseline always comes first, since
    every speedup in the sweep is measured against it."""
    paths = task.kernel_paths()
    if variant is not None:
        if variant not in paths:
            raise KeyError(f"task {task.name} has no variant {variant!r} (it has: {', '.join(paths)})")
        paths = {"baseline": paths["baseline"], variant: paths[variant]}
    kernels = {label: load_kernel(path, include_roots=task.kernel_folders()) for label, path in paths.items()}
    total = sum(k.combinations for k in kernels.values())
    if total > max_combinations:
        raise ValueError(f"task {task.name} has {total:,} knob combinations, over the limit of "
                         f"{max_combinations:,}: sweep one --variant, or raise the limit with --max-combinations "
                         f"{total}")
    return [(label, kernel.with_knobs(knobs)) for label, kernel in kernels.items() for knobs in kernel.knob_space()]


def sweep(
    task: Task,
    task_file: Path,
    out: Path,
    variant: str | None = None,
    worker: GpuWorker | None = None,
    arch: str | None = None,
    settings: Settings | None = None,
    on_result: Callable[[SweepRecord, int, int], None] | None = None,
    max_combinations: int = MAX_COMBINATIONS,
) -> SweepCache:
    """Evaluate every candidate (compile-only without a worker), resuming from `out` if it exists."""
    evaluator = Evaluator(task.problem(), worker, arch, settings)
    cache = _open(out, task, task_file, evaluator.arch, worker)
    if worker is not None and cache.ceilings is None:
        cache.ceilings = {k: v for k, v in ceilings(worker).items() if k != "device"}
    if cache.baseline_timing is not None:  # a resumed sweep: speedups against the baseline it measured
        evaluator.baseline_timing = Timing.model_validate(cache.baseline_timing)
    todo = candidates(task, variant, max_combinations)
    built = evaluator.build([kernel for _, kernel in todo])  # every compile at once; the runs read the cache
    done = cache.done()
    for number, ((label, kernel), ahead) in enumerate(zip(todo, built), start=1):
        if ahead.outcome.candidate_id in done:
            continue
        started = time.perf_counter()
        # the library function is timed once, beside the baseline, not beside every candidate
        if label == "baseline" and cache.baseline_timing is None:
            outcome = evaluator.measure_baseline(kernel)
            if worker is not None:
                if outcome.timing is None:
                    raise RuntimeError(f"the baseline failed, so nothing can be compared: {outcome.message}")
                cache.baseline_timing = outcome.timing.model_dump()
        else:
            (outcome,) = evaluator.evaluate([kernel])
        record = SweepRecord(kernel=label, file=os.path.relpath(kernel.path, task.root), knobs=kernel.knobs,
                             outcome=outcome, seconds=round(time.perf_counter() - started, 3),
                             source_sha256=source_hash(kernel.source))
        cache.records.append(record)
        _save(cache, out)
        if on_result:
            on_result(record, number, len(todo))
    return cache


def _open(out: Path, task: Task, task_file: Path, arch: str, worker: GpuWorker | None) -> SweepCache:
    executor = "gpu" if worker is not None else "compile-only"
    if out.exists():
        cache = SweepCache.model_validate_json(out.read_text())
        if (cache.task, cache.arch, cache.executor) != (task.name, arch, executor):
            raise ValueError(f"{out} holds a sweep of {cache.task} ({cache.executor}, {cache.arch}); "
                             f"this one is {task.name} ({executor}, {arch}): choose another --out")
        if cache.task_sha256 != task.fingerprint():
            raise ValueError(f"{out} holds a sweep of an earlier version of task {task.name} (its sizes, "
                             "buffers, tolerances or reference changed since): choose another --out")
        return cache
    gpu = None
    if worker is not None:
        gpu = worker.info or worker.start()
    return SweepCache(
        task=task.name, task_file=str(task_file), created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        executor=executor, arch=arch, compiler={"nvrtc": nvrtc_version()}, gpu=gpu, task_sha256=task.fingerprint(),
    )


def _save(cache: SweepCache, out: Path) -> None:
    write_atomic(out, json.dumps(cache.model_dump(mode="json"), indent=1).encode())


def tasks_with_recordings(path: Path, recordings: Path) -> list[tuple[Path, Task, Path]]:
    """(file, task, its recorded sweep) for every task under `path` that has one in `recordings`."""
    return [(file, task, recordings / f"{task.name}.json") for file, task in load_suite([path])
            if (recordings / f"{task.name}.json").exists()]


def best(cache: SweepCache) -> SweepRecord | None:
    timed = [r for r in cache.records if r.outcome.status is Status.ok and r.outcome.timing]
    return min(timed, key=lambda r: r.outcome.timing.median_ms, default=None)
