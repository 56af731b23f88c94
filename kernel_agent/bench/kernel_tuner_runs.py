"""Run kernel_tuner's own search strategies in simulation mode over a kernel_tuner cache.

Why: to compare kernel_tuner's strategies with ours on exactly the same search space and the same
recorded timings, in this Python process, without a GPU. kernel_tuner's SimulationRunner serves every
configuration from the cache, so a run costs milliseconds to seconds instead of hours.

The search space is every configuration recorded in the cache, failures included: a configuration that
failed to compile or run when the cache was made costs an evaluation here too, as it did in the real
tuning run. (kernel_tuner's own `tune_cache` instead drops failed configurations from the space, which
would make its strategies look better than ours.) Configurations absent from the cache are restricted
away, so they are never evaluated and cost nothing.

Strategies, tried with kernel_tuner 1.5.0 at a budget of 200 on five real caches (convolution on MI50,
A100 and RTX 3090, dedispersion on A100, pnpoly on RTX 3090), three seeds each:

- kept (STRATEGIES): none exceeds the budget, each run is deterministic for a seed, and a run takes
  0.2-1 s on convolution MI50 (bayes_opt up to 5 s on the 11k-configuration dedispersion space, as it
  predicts over every unvisited configuration). Some stop short of the budget by their own design:
  simulated_annealing always stops at 3/4 of it (its temperature reaches T_min after 0.75 * max_fevals
  distinct evaluations); dual_annealing stops after max_fevals *calls*, revisits included, so after
  25-75% of it; firefly_algorithm and genetic_algorithm sometimes end a little early at their maxiter.
- dropped:
  brute_force: rejects the max_fevals option (ValueError): it always sweeps the whole space.
  minimize: one local descent from one random start; it ends after 7-35 of 200 evaluations.
  basinhopping: its L-BFGS-B steps mostly snap back to configurations it has already seen, so on
  convolution MI50 it made thousands of calls for 29-148 distinct configurations and took 3.4 s,
  ten times the others, while using well under its budget.
  skopt, pyatf_strategies: need packages (scikit-optimize, pyATF) that kernel_tuner does not install.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import math
import random
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

STRATEGIES: tuple[str, ...] = (
    "random_sample",
    "genetic_algorithm",
    "pso",
    "firefly_algorithm",
    "diff_evo",
    "simulated_annealing",
    "dual_annealing",
    "greedy_ils",
    "mls",
    "greedy_mls",
    "ordered_greedy_mls",
    "bayes_opt",
    "hybrid_vndx",
    "adaptive_tabu_greywolf",
    "nsga2",
    "nsga3",
)

_NOT_INSTALLED = "kernel_tuner is not installed: pip install 'kagent[tuner]'"
_OBJECTIVE = "time"


def available() -> bool:
    """Whether kernel_tuner can be imported (it is the optional dependency `kagent[tuner]`)."""
    try:
        importlib.import_module("kernel_tuner")
    except ImportError:
        return False
    return True


def kernel_tuner_version() -> str | None:
    """The installed kernel_tuner's version, None when it is not installed; results depend on it."""
    try:
        return metadata.version("kernel_tuner")
    except metadata.PackageNotFoundError:
        return None


def trace(cache: Mapping[str, Any], strategy: str, seed: int, budget: int) -> list[float | None]:
    """The objective ("time", in the cache's units) of each distinct configuration `strategy` evaluated,
    in the order it first evaluated them; None for a failed configuration; at most `budget` entries."""
    return [value for _, value in _keyed_trace(cache, strategy, seed, budget)]


def _keyed_trace(cache: Mapping[str, Any], strategy: str, seed: int, budget: int) -> list[tuple[str, float | None]]:
    """As `trace`, with each value's cache key ("v1,v2,..."), so that callers can check which configuration
    was evaluated.

    Budget: kernel_tuner's SimulationRunner counts one evaluation for each configuration it serves from
    the cache for the first time, failed ones included (they are cache entries like any other); revisits
    cost nothing, and configurations outside the space (here: absent from the cache) are rejected by the
    restrictions before they reach the runner, so they cost nothing either. The distinct configurations
    in the results are therefore exactly the evaluations the budget counted.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown kernel_tuner strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    if budget < 1:
        raise ValueError(f"budget must be at least 1, not {budget}")
    results = _run(cache, strategy, seed, budget)
    names = list(cache["tune_params_keys"])
    values = {key: _objective(entry) for key, entry in cache["cache"].items()}
    seen: dict[str, float | None] = {}
    for result in results:
        key = _key(result[name] for name in names)
        if key not in values:  # the restriction admits only cached keys: kernel_tuner changed underneath us
            raise RuntimeError(f"kernel_tuner evaluated {key}, which is not in the cache")
        seen.setdefault(key, values[key])
    return list(seen.items())[:budget]


def _run(cache: Mapping[str, Any], strategy: str, seed: int, budget: int) -> list[dict[str, Any]]:
    """One simulated kernel_tuner run on a temporary copy of the cache (kernel_tuner reads a file, and
    would append to it outside simulation mode), silent and seeded."""
    kernel_tuner = _import("kernel_tuner")
    # kernel_tuner imports a strategy's module (and with it scikit-learn, pymoo...) and scipy's Latin
    # hypercube sampler on first use; such imports may draw from the RNGs (scipy.stats asks
    # `default_rng()` for one), which would make a process's first run differ from the next ones with
    # the same seed. So import them all before seeding.
    strategy_module = _import("kernel_tuner.interface").strategy_map[strategy].tune.__module__
    for module in ("kernel_tuner.runners.simulation", "scipy.stats.qmc", strategy_module):
        _import(module)
    function_constraint = _import("constraint").FunctionConstraint  # python-constraint2, kernel_tuner's dep
    names = list(cache["tune_params_keys"])
    tune_params = {name: list(cache["tune_params"][name]) for name in names}  # kernel_tuner needs this order
    cached = frozenset(cache["cache"])

    def in_cache(*values: Any) -> bool:
        return _key(values) in cached

    seed %= 2**32  # numpy and pymoo take only non-negative seeds below 2**32
    with _seeded(seed), tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cache.json"
        path.write_text(json.dumps(dict(cache)))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results, _ = kernel_tuner.tune_kernel(
                cache["kernel_name"], "", _problem_size(cache["problem_size"]), [], tune_params,
                cache=str(path), simulation_mode=True, restrictions=[function_constraint(in_cache)],
                strategy=strategy, strategy_options={"max_fevals": budget}, objective=_OBJECTIVE, seed=seed,
                quiet=True, verbose=False)
    return list(results)


@contextlib.contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Make a run depend on `seed` alone, and leave the process's RNGs as they were.

    The strategies and the search space draw from Python's and numpy's global RNGs (scipy's optimizers
    and scikit-learn use numpy's when given no seed), which seeding fixes. But scipy's Latin hypercube
    sampler (diff_evo's first population, bayes_opt's initial sample) asks `np.random.default_rng()` for
    fresh OS entropy, so for the run's duration a call without a seed gets the next child of a
    SeedSequence made from `seed` instead (so runs must not overlap in threads). nsga2 and nsga3 (pymoo)
    take kernel_tuner's own `seed` option.
    """
    python_state, numpy_state, fresh = random.getstate(), np.random.get_state(), np.random.default_rng
    children = np.random.SeedSequence(seed)

    def default_rng(entropy: Any = None) -> np.random.Generator:
        return fresh(children.spawn(1)[0] if entropy is None else entropy)

    random.seed(seed)
    np.random.seed(seed)
    np.random.default_rng = default_rng  # type: ignore[assignment]
    try:
        yield
    finally:
        np.random.default_rng = fresh
        random.setstate(python_state)
        np.random.set_state(numpy_state)


def _import(name: str) -> ModuleType:
    """Import kernel_tuner (or one of its own dependencies) only when a run needs it: it is optional."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise RuntimeError(_NOT_INSTALLED) from error


def _key(values: Any) -> str:
    """The cache key of a configuration, as kernel_tuner writes and looks it up."""
    return ",".join(str(value) for value in values)


def _objective(entry: Mapping[str, Any]) -> float | None:
    """The entry's time; None when the configuration failed (the time is then a string such as
    "CompilationFailedConfig") or the time is missing or not finite."""
    value = entry.get(_OBJECTIVE)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _problem_size(size: int | Sequence[int]) -> tuple[int, ...]:
    """kernel_tuner checks the problem size against the cache's, which JSON turned into a list."""
    return (size,) if isinstance(size, int) else tuple(size)
