"""kernel_tuner caches read as recorded spaces, searched by kagent's strategies through the loop."""

import gzip
import json
from pathlib import Path

import pytest

from kernel_agent.foreign_cache import LABEL, ForeignCacheError, load_foreign, specialist_of
from kernel_agent.optimize.executors import ForeignReplayExecutor, foreign_space
from kernel_agent.optimize.loop import RunConfig, search
from kernel_agent.optimize.store import Store
from kernel_agent.optimize.strategies import make_strategy
from sandbox import Status

PNPOLY = Path(__file__).resolve().parents[1] / "data" / "kernel_tuner_caches" / "pnpoly_RTX_3090.json.gz"


def small_cache(tmp_path: Path) -> Path:
    """3 x 4 x 2 parameters; (1,*,*) left out by restrictions; block 256 fails to compile; x=4 fails to run."""
    cache = {}
    for x in (1, 2, 4):
        for block in (32, 64, 128, 256):
            for pad in (0, 1):
                if x == 1 and block == 32:
                    continue
                time = "CompilationFailedConfig" if block == 256 else (
                    "RuntimeFailedConfig" if x == 4 and pad == 1 else 1.0 + abs(block - 128) / 64 + 0.1 * pad / x)
                cache[f"{x},{block},{pad}"] = {"tile_size_x": x, "block_size_x": block, "use_padding": pad,
                                               "time": time}
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"device_name": "Test GPU", "kernel_name": "k", "problem_size": [64],
                                "tune_params_keys": ["tile_size_x", "block_size_x", "use_padding"],
                                "tune_params": {"tile_size_x": [1, 2, 4], "block_size_x": [32, 64, 128, 256],
                                                "use_padding": [0, 1]},
                                "objective": "time", "cache": cache}))
    return path


def test_a_cache_reads_as_a_space_with_its_restrictions_and_failures(tmp_path):
    cache = load_foreign(small_cache(tmp_path))
    assert (cache.size, cache.product_size, cache.failures) == (22, 24, 9)
    assert cache.default() == ("1", "64", "0")  # (1, 32, *) is not recorded: the first that ran
    knobs = cache.knobs()
    assert [k.specialist for k in knobs.values()] == ["memory", "launch", "memory"]
    assert knobs["block_size_x"].values == ["64", "32", "128", "256"]  # the default's value first
    space = foreign_space(cache)
    assert space.size == 22
    assert not space.contains(cache.candidate(("1", "32", "0")))
    assert all(space.contains(c) for c in space.all())
    out = {c: cache.outcome(c).status for c in space.all()}
    assert sum(s is Status.compile_error for s in out.values()) == 6
    assert sum(s is Status.runtime_error for s in out.values()) == 3
    outside = cache.outcome(cache.candidate(("1", "32", "0")))
    assert outside.status is Status.launch_error and "not in the recorded space" in outside.message
    best = cache.outcome(cache.candidate(("4", "128", "0")))
    assert best.timing is not None and best.timing.median_ms == cache.best_ms == 1.0
    final = ForeignReplayExecutor(cache).final(cache.candidate(("2", "128", "0")))
    assert final.speedup == pytest.approx(2.0)  # the default (1, 64, 0) takes 2 ms


@pytest.mark.parametrize("strategy", ["agent", "evolutionary", "random", "exhaustive"])
def test_strategies_search_only_the_recorded_configurations(tmp_path, strategy):
    cache = load_foreign(PNPOLY)
    space = foreign_space(cache)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config = RunConfig(run_id="r", task_file=str(PNPOLY), task=cache.kernel, family=cache.kernel, arch=cache.device,
                       strategy=strategy, seed=3, budget=60, executor="replay", warm_start=False, generic=False)
    store = Store(tmp_path / "s.sqlite")
    try:
        result = search(config, space, ForeignReplayExecutor(cache), make_strategy(strategy), run_dir, store)
    finally:
        store.close()
    attempts = result.state.attempts
    assert len(attempts) == 60 and len({a.candidate for a in attempts}) == 60
    assert all(space.contains(a.candidate) for a in attempts)
    assert attempts[0].candidate == cache.candidate(cache.default())
    for a in attempts:  # every answer is the cache's own
        recorded = cache.results[cache.values_of(a.candidate)]
        assert a.ms == recorded if isinstance(recorded, float) else a.outcome.status is recorded


def test_the_agent_beats_random_on_a_real_cache(tmp_path):
    """pnpoly on an RTX 3090: 4,092 configurations; the agent reaches 95% of the optimum sooner."""
    cache = load_foreign(PNPOLY)
    space = foreign_space(cache)
    firsts = {}
    for strategy in ("agent", "random"):
        counts = []
        for seed in range(5):
            run_dir = tmp_path / f"{strategy}{seed}"
            run_dir.mkdir()
            config = RunConfig(run_id=f"{strategy}{seed}", task_file=str(PNPOLY), task=cache.kernel,
                               family=cache.kernel, arch=cache.device, strategy=strategy, seed=seed, budget=120,
                               executor="replay", warm_start=False, generic=False)
            store = Store(tmp_path / "s.sqlite")
            try:
                result = search(config, space, ForeignReplayExecutor(cache), make_strategy(strategy), run_dir, store)
            finally:
                store.close()
            ms = [a.ms for a in result.state.attempts]
            counts.append(next((n for n, t in enumerate(ms, 1) if t and t <= cache.best_ms / 0.95), 121))
        firsts[strategy] = sorted(counts)[2]
    assert firsts["agent"] < firsts["random"], firsts


def test_bad_caches_are_refused_with_the_reason(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ForeignCacheError, match="not a kernel_tuner cache"):
        load_foreign(bad)
    bad.write_text(json.dumps({"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "cache": {}}))
    with pytest.raises(ForeignCacheError, match="no configuration in it ran"):
        load_foreign(bad)
    bad.write_text(json.dumps({"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "objective": "GFLOP/s",
                               "cache": {"1": {"a": 1, "GFLOP/s": 3.0}}}))
    with pytest.raises(ForeignCacheError, match="tuned for 'GFLOP/s'"):
        load_foreign(bad)
    bad.write_text(json.dumps({"tune_params_keys": ["a"], "tune_params": {"a": [1]},
                               "cache": {"2": {"a": 2, "time": 1.0}}}))
    with pytest.raises(ForeignCacheError, match="not a configuration"):
        load_foreign(bad)
    zipped = tmp_path / "ok.json.gz"
    zipped.write_bytes(gzip.compress(small_cache(tmp_path).read_bytes()))
    assert load_foreign(zipped).size == 22


def test_specialists_by_parameter_name():
    assert [specialist_of(n) for n in ("block_size_y", "tile_size_x", "use_shmem", "loop_unroll_factor", "split_k",
                                       "between_method")] == ["launch", "memory", "memory", "compute", "reduction",
                                                               "compute"]
    assert LABEL == "baseline"


WIDE_SWEEPS = Path(__file__).resolve().parents[1] / "data" / "h200" / "wide_sweeps"
MAXPOOL_SWEEP = WIDE_SWEEPS / "maxpool2d_wide.json.gz"


def test_a_full_kagent_sweep_reads_as_a_cache_of_its_variant():
    cache = load_foreign(MAXPOOL_SWEEP)  # its kernel, size, failures and best: the test below
    assert cache.default() == ("256", "4", "1", "4", "1", "1")  # the variant's declared defaults
    assert cache.knobs()["BLOCK"].values == ["256", "128", "512", "64", "1024", "32"]  # in the declared order
    assert cache.problem_size == [32, 64, 256, 256, 128, 128]  # the timed size's dims


@pytest.mark.parametrize(("name", "variant", "size", "failures", "best_ms"), [
    ("maxpool2d_wide", "tiled", 1728, 18, 0.1764),
    ("transpose_wide", "tiled", 1728, 276, 0.2802),
    ("attention_wide", "flash", 2400, 810, 0.1685),
    ("layernorm_wide", "rowwise", 1152, 288, 0.1469),
])
def test_the_full_h200_sweeps_cover_their_spaces(name, variant, size, failures, best_ms):
    """Each kept sweep is whole: every combination of its variant (the baseline left out) recorded once,
    failures included."""
    cache = load_foreign(WIDE_SWEEPS / f"{name}.json.gz")
    assert cache.kernel == f"{name}:{variant}" and cache.device == "NVIDIA H200"
    assert cache.size == cache.product_size == size and cache.failures == failures
    assert cache.best_ms == pytest.approx(best_ms, abs=5e-5)


def kagent_sweep(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"format": "kagent-sweep/1", "task": "t", "gpu": {"name": "GPU"}, "records": records}))
    return path


def record(kernel: str, knobs: dict, status: str, ms: float | None = None) -> dict:
    timing = {"median_ms": ms} if ms else None
    return {"kernel": kernel, "knobs": knobs, "outcome": {"status": status, "timing": timing,
                                                          "sizes_checked": ["n=7", "n=1000"] if ms else []}}


def test_a_kagent_sweeps_failures_keep_their_kind(tmp_path):
    path = kagent_sweep(tmp_path, [
        record("baseline", {}, "ok", 9.0),
        record("v", {"B": "64", "S": "1e3"}, "ok", 2.0),
        record("v", {"B": "32", "S": "1e3"}, "compile_error"),
        record("v", {"B": "64", "S": "7"}, "resource_error"),
        record("v", {"B": "32", "S": "7"}, "wrong_result"),
    ])
    cache = load_foreign(path)
    assert cache.raw["cache"]["64,1e3"]["time"] == 2.0 and cache.raw["cache"]["64,1e3"]["B"] == 64
    assert [cache.raw["cache"][k]["time"] for k in ("32,1e3", "64,7", "32,7")] == [
        "CompilationFailedConfig", "InvalidConfig", "RuntimeFailedConfig"]
    assert cache.raw["tune_params"]["S"] == ["1e3", 7]  # "1e3" would not write back as itself
    assert cache.problem_size == [1000]
    statuses = {c: cache.outcome(cache.candidate(c)).status for c in [("32", "1e3"), ("64", "7"), ("32", "7")]}
    assert statuses == {("32", "1e3"): Status.compile_error, ("64", "7"): Status.launch_error,
                        ("32", "7"): Status.runtime_error}


def test_a_sweep_of_several_variants_is_refused(tmp_path):
    path = kagent_sweep(tmp_path, [record("a", {"B": "1"}, "ok", 1.0), record("b", {"B": "1"}, "ok", 1.0)])
    with pytest.raises(ForeignCacheError, match="2 variants"):
        load_foreign(path)
