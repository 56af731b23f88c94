"""window2d's three instances (avgpool2d, depthwise_conv2d, maxpool2d) at 72 knob combinations each on a GPU,
then each STAGE's best re-timed beside the naive kernel and torch (three rounds, median). A benchmark, not a
test: `OUT=DIR python3 tests/data/ports_bench/window_stages.py` (from the repository root) writes
DIR/window_stages.json and prints each STAGE's best and the default knobs at each STAGE."""

from __future__ import annotations

import itertools
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from kernel_agent.skeletons import port
from kernel_agent.task import load_task
from sandbox import Evaluator, GpuWorker, Kernel, Outcome, Settings, Status, load_kernel

CASES = [("tasks/naive/avgpool2d.yaml", "tests/data/ports/avgpool2d.md"),
         ("tasks/naive/depthwise_conv2d.yaml", "tests/data/ports/depthwise_conv2d.md"),
         ("tasks/level1/maxpool2d.yaml", "kernel_agent/skeletons/examples/maxpool2d.md")]
SPACE = {"BLOCK": ["256", "128"], "OUT_W": ["4", "2", "1"], "OUT_H": ["1", "2"], "VEC": ["4", "1"],
         "STAGE": ["0", "1", "2"]}
DEFAULTS = {"BLOCK": "256", "OUT_W": "4", "OUT_H": "1", "VEC": "4"}  # the skeleton's, STAGE aside
ROUNDS = 3


def best_of_each_stage(kernels: list[Kernel], outcomes: list[Outcome]) -> dict[str, tuple[Kernel, float]]:
    best: dict[str, tuple[Kernel, float]] = {}
    for kernel, outcome in zip(kernels, outcomes):
        if outcome.status is Status.ok and outcome.timing is not None:
            stage, ms = kernel.knobs["STAGE"], outcome.timing.median_ms
            if stage not in best or ms < best[stage][1]:
                best[stage] = (kernel, ms)
    return best


def beside_naive_and_torch(evaluator: Evaluator, kernel: Kernel, naive: Kernel) -> tuple[float | None, float | None]:
    """Median speedups over ROUNDS side-by-side runs: against the naive kernel, against torch."""
    naive_ratios, torch_ratios = [], []
    for _ in range(ROUNDS):
        (outcome,) = evaluator.evaluate([kernel], beside=naive, library=True)
        if outcome.status is Status.ok and outcome.speedup and outcome.library_speedup:
            naive_ratios.append(outcome.speedup)
            torch_ratios.append(outcome.library_speedup)
    return (statistics.median(naive_ratios) if naive_ratios else None,
            statistics.median(torch_ratios) if torch_ratios else None)


def measure(task_file: str, fill: str, worker: GpuWorker, scratch: Path, began: float) -> list[dict]:
    task = load_task(Path(task_file))
    path = scratch / f"{task.name}.cu"
    path.write_text(port(task, Path(fill).read_text()).source)
    instance = load_kernel(path, include_roots=task.kernel_folders())
    evaluator = Evaluator(task.problem(), worker, settings=Settings(budget_ms=60))
    evaluator.measure_baseline(task.baseline_kernel())
    kernels = [instance.with_knobs(dict(zip(SPACE, values))) for values in itertools.product(*SPACE.values())]
    outcomes = evaluator.evaluate(kernels)
    rows = [{"task": task.name, "knobs": k.knobs, "status": o.status.value,
             "ms": o.timing.median_ms if o.timing else None, "speedup": o.speedup} for k, o in zip(kernels, outcomes)]
    for kernel, outcome in zip(kernels, outcomes):
        if outcome.status is not Status.ok:
            print(f"  NOT OK {task.name} {kernel.knobs} {outcome.status.value}: {outcome.message[:150]}", flush=True)
    correct = sum(o.status is Status.ok for o in outcomes)
    print(f"{task.name}: {correct}/{len(outcomes)} ok at {time.time() - began:.0f} s", flush=True)
    for stage, (kernel, ms) in sorted(best_of_each_stage(kernels, outcomes).items()):
        naive, torch = beside_naive_and_torch(evaluator, kernel, task.baseline_kernel())
        rows.append({"task": task.name, "stage_best": stage, "knobs": kernel.knobs, "alone_ms": ms,
                     "speedup_vs_naive": naive, "speedup_vs_torch": torch})
        print(f"  STAGE={stage} best {kernel.knobs} {ms:.4f} ms; beside naive {naive or float('nan'):.3f}x, "
              f"torch {torch or float('nan'):.3f}x", flush=True)
    for kernel, outcome in zip(kernels, outcomes):
        if all(kernel.knobs[name] == value for name, value in DEFAULTS.items()):
            ms = outcome.timing.median_ms if outcome.timing else float("nan")
            print(f"  defaults but STAGE={kernel.knobs['STAGE']}: {outcome.status.value} {ms:.4f} ms, "
                  f"{outcome.speedup or float('nan'):.3f}x alone", flush=True)
    return rows


def main() -> None:
    out, began, rows = Path(os.environ["OUT"]), time.time(), []
    with GpuWorker(0) as worker, tempfile.TemporaryDirectory() as scratch:
        worker.start()
        for task_file, fill in CASES:
            rows += measure(task_file, fill, worker, Path(scratch), began)
    (out / "window_stages.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"done at {time.time() - began:.0f} s")


if __name__ == "__main__":  # the GPU worker's process is spawned: it imports this file again
    main()
