"""A random sample of each wide space measured on the GPU, written as a kernel_tuner cache file (the format
`kagent replay-bench --cache` reads); status counts and any wrong result printed. On the GPU machine, from the
repository root: `OUT=DIR python3 tests/data/h200/wide_samples/sample_wide.py 360 attention_wide maxpool2d_wide`."""
import collections, json, os, random, sys, time
from kernel_agent.task import load_task
from kernel_agent.optimize.space import Space
from sandbox import Evaluator, GpuWorker, Settings

FAILED = {"compile_error": "CompilationFailedConfig", "resource_error": "InvalidConfig",
          "launch_error": "InvalidConfig"}


def number(v):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def main():
    n = int(sys.argv[1])
    out = os.environ["OUT"]
    with GpuWorker(0) as worker:
        worker.start()
        for name in sys.argv[2:]:
            task = load_task(f"tasks/wide/{name}.yaml")
            space = Space.of_task(task, generic=False)
            label = [k for k in space.kernels if k != "baseline"][0]
            knobs = space.kernels[label].knobs
            rng = random.Random(0)
            members = set()
            while len(members) < n:
                c = space.random(rng)
                if c.kernel == label:
                    members.add(c)
            cands = sorted(members, key=lambda c: c.key)
            ev = Evaluator(task.problem(), worker, None, Settings(budget_ms=20, precision=0.01, launch_timeout_s=3))
            t = time.perf_counter()
            ev.measure_baseline(space.build(space.default("baseline")), library=False)
            built = ev.build([space.build(c) for c in cands])
            tc = time.perf_counter() - t
            names = list(knobs)
            cache = {"device_name": "NVIDIA H200", "kernel_name": name, "problem_size": list(task.dims.values()),
                     "tune_params_keys": names,
                     "tune_params": {k: [number(v) for v in knobs[k].values] for k in names},
                     "objective": "time", "cache": {}}
            counts, wrong, best = collections.Counter(), [], None
            for i, (c, b) in enumerate(zip(cands, built)):
                if b.program is None:
                    o = b.outcome
                else:
                    (o,) = ev.evaluate([b.kernel])
                status = o.status.value
                counts[status] += 1
                values = c.values
                entry = {k: number(values[k]) for k in names}
                entry["time"] = o.timing.median_ms if o.timing else FAILED.get(status, "RuntimeFailedConfig")
                entry["kagent_status"] = status
                cache["cache"][",".join(str(values[k]) for k in names)] = entry
                if status in ("wrong_result", "nondeterministic", "runtime_error", "timeout"):
                    wrong.append((c.label(), status, o.message[:160]))
                if o.timing and (best is None or o.timing.median_ms < best[1]):
                    best = (c.label(), o.timing.median_ms, o.speedup)
                if i % 50 == 49 or i == len(cands) - 1:
                    with open(f"{out}/{name}_H200_sample.json", "w") as f:
                        json.dump(cache, f)
            print(f"{name}: {n} sampled, build {tc:.0f} s, total {time.perf_counter()-t:.0f} s: {dict(counts)}; "
                  f"best {best}", flush=True)
            for w in wrong[:8]:
                print("   ", w, flush=True)


if __name__ == "__main__":
    main()
