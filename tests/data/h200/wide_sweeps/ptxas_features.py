"""Offline, on the full H200 sweeps: does adding ptxas features (log2 registers, log1p spills, log1p static
shared memory) to the predictor's knob features rank held-out configurations better? For n = 25, 50, 100
training rows (5 random splits, 300 held out), the median Spearman of predicted against measured time.
Run from the repository root: `python3 tests/data/h200/wide_sweeps/ptxas_features.py transpose_wide maxpool2d_wide`."""
import gzip, json, math, random, statistics, sys
from pathlib import Path
from kernel_agent.foreign_cache import load_foreign
from kernel_agent.optimize.executors import foreign_space
from kernel_agent.optimize.predictor import Predictor, candidate_features, spearman

for name in sys.argv[1:]:
    path = Path(f"tests/data/h200/wide_sweeps/{name}.json.gz")
    cache = load_foreign(path); space = foreign_space(cache)
    sweep = json.load(gzip.open(path))
    res = {}
    for r in sweep["records"]:
        if r["kernel"] == "baseline" or r["outcome"]["status"] != "ok":
            continue
        k = r["outcome"]["resources"][0]  # the variant's one kernel
        key = tuple(sorted(r["knobs"].items()))
        res[key] = (r["outcome"]["timing"]["median_ms"], k)
    rows = []
    for values, ms in cache.results.items():
        key = tuple(sorted(zip(cache.params, values)))
        if key not in res: continue
        c = cache.candidate(values)
        f = candidate_features(space, c)
        _, k = res[key]
        g = dict(f, ptx_regs=math.log2(k["registers"]), ptx_spill=math.log1p(k["spill_stores"] + k["spill_loads"]),
                 ptx_smem=math.log1p(k["static_smem_bytes"]))
        rows.append((f, g, ms))
    for n in (25, 50, 100):
        out = {"knobs": [], "knobs+ptxas": []}
        for seed in range(5):
            rng = random.Random(seed); rng.shuffle(rows)
            train, test = rows[:n], rows[n:n + 300]
            for label, idx in (("knobs", 0), ("knobs+ptxas", 1)):
                p = Predictor(min_timed=5); p.fit([(r[idx], r[2]) for r in train])
                pred = p.predict([r[idx] for r in test])
                out[label].append(spearman([q.log_ms for q in pred], [r[2] for r in test]))
        print(name, n, {k: round(statistics.median(v), 3) for k, v in out.items()}, flush=True)
