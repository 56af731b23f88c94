"""Does the timing gate (sandbox/timing.py) keep host load out of the timed region? On the GPU machine,
from the repository root: `OUT=DIR python3 tests/data/h200/timing_gate/gate_check.py [N]`.

The first N (default: all 237) combinations of attention_wide that ran in its H200 resample are built
once, then each is evaluated four times back to back, with the sandbox's full checks and a 20 ms budget stopped at 1%:
gated and ungated, each on a quiet machine and with one busy process per core beside it (the load of a
compile pool). Writes OUT/gate_check.json (every time) and prints the median ratios to the quiet gated
time, with the 10th and 90th percentiles."""
import gzip
import json
import multiprocessing
import os
import signal
import statistics
import sys
import time

from kernel_agent.task import load_task
from sandbox import Evaluator, GpuWorker, Settings, load_kernel

ARMS = [("gated", False), ("gated", True), ("ungated", True), ("ungated", False)]


def burn():
    while True:
        pass


def main():
    out = os.environ["OUT"]
    task = load_task("tasks/wide/attention_wide.yaml")
    with gzip.open("tests/data/h200/wide_samples/attention_wide_H200_resample.json.gz") as f:
        sample = json.load(f)
    names = sample["tune_params_keys"]
    chosen = [{k: str(e[k]) for k in names} for e in sample["cache"].values() if e["kagent_status"] == "ok"]
    chosen = chosen[:int(sys.argv[1])] if len(sys.argv) > 1 else chosen
    paths = task.kernel_paths()
    flash = load_kernel(paths["flash"], include_roots=task.kernel_folders())
    kernels = [flash.with_knobs(k) for k in chosen]
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(os.cpu_count() or 1)]
    for b in burners:
        b.start()
        os.kill(b.pid, signal.SIGSTOP)
    results = {f"{g}{'+load' if load else ''}": [] for g, load in ARMS}
    with GpuWorker(0) as worker:
        worker.start()
        evaluators = {g: Evaluator(task.problem(), worker, None, Settings(budget_ms=20, precision=0.01,
                                                                         timing_gate=(g == "gated")))
                      for g in ("gated", "ungated")}
        baseline = load_kernel(paths["baseline"], include_roots=task.kernel_folders())
        for ev in evaluators.values():
            ev.measure_baseline(baseline, library=False)
        t = time.perf_counter()
        evaluators["gated"].build(kernels)
        print(f"built {len(kernels)} in {time.perf_counter() - t:.0f} s", flush=True)
        for i, kernel in enumerate(kernels):
            for g, load in ARMS:
                for b in burners:
                    os.kill(b.pid, signal.SIGCONT if load else signal.SIGSTOP)
                (o,) = evaluators[g].evaluate([kernel])
                results[f"{g}{'+load' if load else ''}"].append(o.timing.median_ms if o.timing else None)
            if i % 20 == 19 or i == len(kernels) - 1:
                print(f"{i + 1} done, {time.perf_counter() - t:.0f} s", flush=True)
                report(out, chosen, results)
    for b in burners:
        b.kill()


def report(out, chosen, results):
    with open(f"{out}/gate_check.json", "w") as f:
        json.dump({"knobs": chosen, "median_ms": results}, f)
    quiet = results["gated"]
    for arm, times in results.items():
        ratios = sorted(x / q for x, q in zip(times, quiet) if x and q)
        print(f"  {arm}: {len(ratios)} timed, median {statistics.median(ratios):.3f} "
              f"(p10 {ratios[len(ratios) // 10]:.3f}, p90 {ratios[9 * len(ratios) // 10]:.3f}) x the quiet gated time",
              flush=True)


if __name__ == "__main__":
    main()
