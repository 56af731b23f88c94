"""Skeleton instances against their hand-written twins, side by side on one GPU (a benchmark, not a
test): `python3 -m kernel_agent.skeletons.twins [--only TASK,TASK] [--out FILE.json]` (`--only`: those
examples, in that order).

Each example fill (`examples/TASK.md`) re-expresses an expert variant of a suite task as a skeleton
instance. For each, knob combinations of the task's hand-written variants and of the instance are
timed (up to 16 a side: the defaults, a seeded sample, and for the instance every combination that
agrees with the variants' best on the knobs they share); then the instance's best and the variants'
best are timed again in one request (the same inputs, alternating launches), five times, and the
median ratio is reported: instance time over variant time, the bar being at most 1.05."""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

from sandbox import Evaluator, GpuWorker, Kernel, Outcome, Settings, Status, load_kernel

from ..task import Task
from . import LIBRARY, SkeletonError, port, suite_task

ROUNDS = 5
BAR = 1.05
MAX_COMBINATIONS = 16  # a side: the defaults, the instance's twin of the variant's best, a seeded sample


def examples(folder: Path = LIBRARY / "examples") -> list[Path]:
    return sorted(folder.glob("*.md"))


def _best(kernels: list[Kernel], outcomes: list[Outcome]) -> tuple[Kernel, float] | None:
    timed = [(o.timing.median_ms, k) for k, o in zip(kernels, outcomes)
             if o.status is Status.ok and o.timing is not None]
    if not timed:
        return None
    ms, kernel = min(timed, key=lambda pair: pair[0])
    return kernel, ms


def _combinations(kernel: Kernel, limit: int = MAX_COMBINATIONS, like: dict[str, str] | None = None) -> list[Kernel]:
    """The default knobs, those agreeing with `like` on every knob the two share (the twin's best),
    then a seeded sample of the rest, `limit` in all."""
    every = [kernel.with_knobs(knobs) for knobs in kernel.knob_space()]
    first = [kernel.with_knobs({})]
    if like:
        first += [k for k in every if all(k.knobs[n] == v for n, v in like.items() if n in k.knobs)]
    chosen = {tuple(sorted(k.knobs.items())): k for k in first}
    rest = [k for k in every if tuple(sorted(k.knobs.items())) not in chosen]
    room = max(0, limit - len(chosen))
    return [*chosen.values(), *random.Random(0).sample(rest, min(room, len(rest)))]


def compare(task: Task, fill: Path, worker: GpuWorker, scratch: Path) -> dict:
    """The instance of `fill` against the task's variants: best times alone and the side-by-side ratio."""
    path = scratch / f"{task.name}.cu"
    path.write_text(port(task, fill.read_text()).source)
    roots = task.kernel_folders()
    variants = [load_kernel(p, include_roots=roots) for label, p in task.kernel_paths().items() if label != "baseline"]
    variants = [k for v in variants for k in _combinations(v, max(2, MAX_COMBINATIONS // len(variants)))]
    evaluator = Evaluator(task.problem(), worker, settings=Settings(budget_ms=100))
    best_variant = _best(variants, evaluator.evaluate(variants))
    like = best_variant[0].knobs if best_variant else None
    instance = _combinations(load_kernel(path, include_roots=roots), like=like)
    best_instance = _best(instance, evaluator.evaluate(instance))
    row: dict = {"task": task.name, "instance_combinations": len(instance), "variant_combinations": len(variants)}
    if best_instance is None or best_variant is None:
        row["error"] = "no correct " + ("instance" if best_instance is None else "variant")
        return row
    ratios = []
    for _ in range(ROUNDS):
        (outcome,) = evaluator.evaluate([best_instance[0]], beside=best_variant[0])
        if outcome.status is not Status.ok or outcome.speedup is None:
            row["error"] = f"side by side: {outcome.status.value}: {outcome.message}"
            return row
        ratios.append(1.0 / outcome.speedup)  # instance time / variant time
    row.update(instance_ms=best_instance[1], instance_knobs=best_instance[0].knobs,
               variant_ms=best_variant[1], variant=best_variant[0].path.name, variant_knobs=best_variant[0].knobs,
               ratio=statistics.median(ratios), ratios=ratios)
    row["within_bar"] = row["ratio"] <= BAR
    return row


def main(argv: list[str]) -> int:
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else None
    chosen = examples() if only is None else sorted((f for f in examples() if f.stem in only),
                                                    key=lambda f: only.index(f.stem))  # in the order asked
    rows = []
    with GpuWorker(0) as worker, tempfile.TemporaryDirectory() as scratch:
        worker.start()
        for fill in chosen:
            task = suite_task(fill.stem)
            if task is None:
                raise SkeletonError(f"{fill}: no suite task {fill.stem} to compare with")
            row = compare(task, fill, worker, Path(scratch))
            rows.append(row)
            if "error" in row:
                print(f"{row['task']:16s} ERROR {row['error']}", flush=True)
            else:
                print(f"{row['task']:16s} instance {row['instance_ms']:.4f} ms {row['instance_knobs']}  "
                      f"variant {row['variant']} {row['variant_ms']:.4f} ms {row['variant_knobs']}  "
                      f"side by side: instance/variant {row['ratio']:.3f} "
                      f"({'within' if row['within_bar'] else 'OVER'} {BAR})", flush=True)
    if out:
        out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if rows and all(r.get("within_bar") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
