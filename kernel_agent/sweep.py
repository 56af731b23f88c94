"""`kagent sweep`: every knob combination of a task's kernels, measured (or compiled) and recorded
(format in `recording.py`). The space is compiled a chunk at a time, the next chunk on every core while
this one runs, so the first results come after one chunk's compile, not the whole space's, and the
compiles of the rest hide behind the runs. The recording is rewritten every couple of seconds and when
the sweep stops, interrupted or not, so an interrupted sweep resumes where it stopped and compiles only
what is left. Compiling beside the runs once made attention_wide's timings 16% slower (median) on the
H200; the sandbox's timing gate (`sandbox/timing.py`) has kept host load out of timed regions since
(1.002x with every core busy, `tests/data/h200/timing_gate/`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from sandbox import (
    MAX_COMBINATIONS,
    Built,
    Evaluator,
    GpuWorker,
    Kernel,
    Settings,
    Timing,
    ceilings,
    key_of,
    load_kernel,
    nvrtc_version,
)

from .recording import SweepCache, SweepRecord, load, save, source_hash
from .task import Task

SAVE_EVERY_S = 2.0  # the whole file is rewritten, so not after every record; a killed sweep loses this much
CHUNK_PER_CORE = 4  # candidates compiled at a time per core: ~10 s of matmul compiles on 16 cores, while the
# chunk before runs (an interrupted sweep lets the chunk in flight finish compiling in the background)


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
    every = candidates(task, variant, max_combinations)
    done = cache.done()
    # a resumed sweep compiles only what it has not recorded yet; a candidate's id costs an include screen
    # (10 s over matmul_fp32_wide's 3,457), so a fresh sweep does not look them up
    todo = [(label, kernel) for label, kernel in every
            if key_of(kernel.compile_job(evaluator.arch)) not in done] if done else every
    saved = time.monotonic()
    size = chunk_size()
    ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sweep-compile")
    pending: Future[list[Built]] | None = None
    try:
        for index, (label, kernel) in enumerate(todo):
            if index % size == 0:  # this chunk compiled (its runs below read the compile cache), the next started
                (pending or _build(ahead, evaluator, todo[index:index + size])).result()
                following = todo[index + size:index + 2 * size]
                pending = _build(ahead, evaluator, following) if following else None
            cache.records.append(_measure(evaluator, task, cache, label, kernel, worker))
            if time.monotonic() - saved > SAVE_EVERY_S:
                save(cache, out)
                saved = time.monotonic()
            if on_result:
                on_result(cache.records[-1], len(every) - len(todo) + index + 1, len(every))
    finally:
        ahead.shutdown(wait=False, cancel_futures=True)
        save(cache, out)  # also when interrupted: everything measured is kept
    return cache


def _build(ahead: ThreadPoolExecutor, evaluator: Evaluator, chunk: list[tuple[str, Kernel]]) -> Future[list[Built]]:
    """A compile that raises (not a compile error: that is an outcome) stops the sweep at its `result()`."""
    return ahead.submit(evaluator.build, [kernel for _, kernel in chunk])


def chunk_size() -> int:
    return CHUNK_PER_CORE * (os.cpu_count() or 1)


def _measure(evaluator: Evaluator, task: Task, cache: SweepCache, label: str, kernel: Kernel,
             worker: GpuWorker | None) -> SweepRecord:
    """One candidate's record (the baseline, the first time, measured with the library function)."""
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
    return SweepRecord(kernel=label, file=os.path.relpath(kernel.path, task.root), knobs=kernel.knobs,
                       outcome=outcome, seconds=round(time.perf_counter() - started, 3),
                       source_sha256=source_hash(kernel.source))


def _open(out: Path, task: Task, task_file: Path, arch: str, worker: GpuWorker | None) -> SweepCache:
    executor = "gpu" if worker is not None else "compile-only"
    if out.exists():
        cache = load(out)
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
        task=task.name, task_file=str(task_file), created=datetime.now(UTC).isoformat(timespec="seconds"),
        executor=executor, arch=arch, compiler={"nvrtc": nvrtc_version()}, gpu=gpu, task_sha256=task.fingerprint(),
    )
