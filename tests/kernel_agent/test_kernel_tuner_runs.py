"""kernel_tuner's strategies replayed over a cache: each trace must be a faithful, budgeted, seeded record
of what kernel_tuner evaluated, over exactly the configurations the cache records (failures included)."""

from __future__ import annotations

import copy
import itertools
import math
import random
import sys
from typing import Any

import numpy as np
import pytest

pytest.importorskip("kernel_tuner")

from kernel_agent.bench import kernel_tuner_runs
from kernel_agent.bench.kernel_tuner_runs import _keyed_trace, trace

STRATEGIES = ("random_sample", "genetic_algorithm", "diff_evo")  # diff_evo: its first population is an LHS
BUDGET = 30


def _cache() -> dict[str, Any]:
    """A 5 x 4 x 5 product with a few configurations absent (as if restricted) and a few failed."""
    tune_params = {"block_size_x": [16, 32, 64, 128, 256], "tile": [1, 2, 3, 4], "unroll": [0, 1, 2, 3, 4]}
    entries: dict[str, dict[str, Any]] = {}
    for number, (block, tile, unroll) in enumerate(itertools.product(*tune_params.values())):
        if number % 13 == 5:
            continue  # absent: never evaluated
        entry: dict[str, Any] = {"block_size_x": block, "tile": tile, "unroll": unroll}
        if number % 11 == 3:
            entry["time"] = "CompilationFailedConfig" if number % 2 else "RuntimeFailedConfig"
        else:
            entry["time"] = 1.0 + (math.log2(block) - 6) ** 2 + 0.5 * (tile - 2.5) ** 2 + 0.1 * unroll
        entries[f"{block},{tile},{unroll}"] = entry
    return {"device_name": "Synthetic GPU", "kernel_name": "synthetic_kernel", "problem_size": [4096, 4096],
            "tune_params_keys": list(tune_params), "tune_params": tune_params, "objective": "time",
            "cache": entries}


CACHE = _cache()
EXPECTED = {key: None if isinstance(entry["time"], str) else entry["time"] for key, entry in CACHE["cache"].items()}


def test_the_synthetic_cache_has_absent_and_failed_configurations() -> None:
    assert 80 < len(EXPECTED) < 100
    assert 5 < sum(value is None for value in EXPECTED.values()) < 15


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_trace_lists_distinct_cached_configurations_with_their_times(strategy: str) -> None:
    keyed = _keyed_trace(CACHE, strategy, seed=1, budget=BUDGET)
    keys = [key for key, _ in keyed]
    assert 0 < len(keyed) <= BUDGET
    assert len(set(keys)) == len(keys)
    assert all(value == EXPECTED[key] for key, value in keyed)  # None exactly for the failed ones
    assert trace(CACHE, strategy, seed=1, budget=BUDGET) == [value for _, value in keyed]


@pytest.mark.parametrize("strategy", kernel_tuner_runs.STRATEGIES)
def test_every_listed_strategy_runs_within_its_budget(strategy: str) -> None:
    keyed = _keyed_trace(CACHE, strategy, seed=1, budget=20)
    assert 0 < len(keyed) <= 20
    assert len({key for key, _ in keyed}) == len(keyed)
    assert all(value == EXPECTED[key] for key, value in keyed)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_seed_fixes_the_trace_and_other_seeds_change_it(strategy: str) -> None:
    first = _keyed_trace(CACHE, strategy, seed=1, budget=BUDGET)
    assert _keyed_trace(CACHE, strategy, seed=1, budget=BUDGET) == first
    assert any(_keyed_trace(CACHE, strategy, seed=seed, budget=BUDGET) != first for seed in (2, 3))


def test_failed_configurations_cost_an_evaluation() -> None:
    keyed = _keyed_trace(CACHE, "random_sample", seed=4, budget=60)
    assert len(keyed) == 60
    assert any(value is None for _, value in keyed)


def test_a_budget_beyond_the_space_stops_at_every_cached_configuration() -> None:
    keyed = _keyed_trace(CACHE, "random_sample", seed=5, budget=1000)
    assert sorted(key for key, _ in keyed) == sorted(EXPECTED)


def test_a_run_leaves_the_cache_and_the_global_rngs_as_they_were() -> None:
    cache = copy.deepcopy(CACHE)
    random.seed(123)
    np.random.seed(123)
    python_state, numpy_state, default_rng = random.getstate(), np.random.get_state(), np.random.default_rng
    trace(cache, "genetic_algorithm", seed=6, budget=10)
    assert cache == CACHE
    assert random.getstate() == python_state
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), numpy_state))
    assert np.random.default_rng is default_rng  # the run swaps it for a seeded one


def test_unknown_strategies_and_empty_budgets_are_refused() -> None:
    with pytest.raises(ValueError, match="random_sample"):
        trace(CACHE, "no_such_strategy", seed=1, budget=10)
    with pytest.raises(ValueError, match="budget"):
        trace(CACHE, "random_sample", seed=1, budget=0)


def test_a_missing_kernel_tuner_is_reported_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kernel_tuner", None)  # makes `import kernel_tuner` raise ImportError
    assert not kernel_tuner_runs.available()
    with pytest.raises(RuntimeError, match=r"pip install 'kagent\[tuner\]'"):
        trace(CACHE, "random_sample", seed=1, budget=10)


def test_the_version_is_reported() -> None:
    assert kernel_tuner_runs.available()
    assert kernel_tuner_runs.kernel_tuner_version()
