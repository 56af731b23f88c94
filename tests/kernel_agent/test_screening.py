"""The agent with its performance predictor: stalled searches jump to the predictor's picks, each pick's
forecast is journaled and checked in report.md, earlier runs' times warm-start it; and the nearest
untried candidate beside the best, found by array operations, is the one a full scan finds."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kernel_agent.foreign_cache import load_foreign
from kernel_agent.optimize.executors import ForeignReplayExecutor, foreign_space
from kernel_agent.optimize.knowledge import KnowledgeBase
from kernel_agent.optimize.loop import RunConfig, learn_earlier, search
from kernel_agent.optimize.neighbourhood import Neighbourhood
from kernel_agent.optimize.run_report import predictor_section
from kernel_agent.optimize.store import Journal, Store
from kernel_agent.optimize.strategies import make_strategy
from kernel_agent.seams import SearchState
from sandbox import Status
from tests.kernel_agent.test_foreign_cache import PNPOLY


def _run(tmp_path: Path, strategy: str, seed: int, budget: int, run_id: str = "r", warm: bool = False,
         predictor: bool = True):
    cache = load_foreign(PNPOLY)
    space = foreign_space(cache)
    run_dir = tmp_path / run_id
    run_dir.mkdir()
    config = RunConfig(run_id=run_id, task_file=str(PNPOLY), task=cache.kernel, family=cache.kernel,
                       arch=cache.device, strategy=strategy, seed=seed, budget=budget, executor="replay",
                       warm_start=warm, generic=False)
    store = Store(tmp_path / "s.sqlite")
    try:
        options = {"predictor": predictor} if strategy == "agent" else {}
        return search(config, space, ForeignReplayExecutor(cache), make_strategy(strategy, **options), run_dir,
                      store), run_dir
    finally:
        store.close()


def test_a_stalled_search_measures_the_predictors_picks_with_their_forecasts(tmp_path):
    result, run_dir = _run(tmp_path, "agent", seed=1, budget=120)
    picked = [a for a in result.state.attempts if a.predicted is not None]
    assert picked, "the search never stalled long enough to jump"
    assert all(a.note == "stalled: the predictor's pick" and a.specialist is None for a in picked)
    assert all(a.predicted.ms > 0 and 0 < a.predicted.p_fail < 1 for a in picked)
    # the journal keeps each forecast, and a resumed run reads it back
    journaled = {a.number: a.predicted for a in Journal(run_dir / "attempts.jsonl").read()}
    assert all(journaled[a.number] == a.predicted for a in result.state.attempts)
    section = "\n".join(predictor_section(result.state.attempts))
    assert "Performance predictor: predicted vs measured" in section
    assert f"{len(picked)} of 120 attempts were picked by screening" in section
    assert "Spearman" in section


def test_without_the_predictor_nothing_is_forecast(tmp_path):
    result, _ = _run(tmp_path, "agent", seed=1, budget=60, predictor=False)
    assert all(a.predicted is None for a in result.state.attempts)
    assert predictor_section(result.state.attempts) == []


def test_earlier_runs_times_warm_start_the_predictor(tmp_path):
    _run(tmp_path, "random", seed=0, budget=30, run_id="first")
    store = Store(tmp_path / "s.sqlite")
    try:
        verdicts = store.earlier_verdicts(load_foreign(PNPOLY).kernel, load_foreign(PNPOLY).device, "replay",
                                          "second")
    finally:
        store.close()
    assert len(verdicts) == 30
    timed = [v for v in verdicts if v[1] == "ok"]
    assert timed and all(isinstance(ms, float) and ms > 0 for _, _, _, ms in timed)
    assert all(ms is None for _, status, _, ms in verdicts if status != "ok")
    state = SearchState(foreign_space(load_foreign(PNPOLY)), random.Random(0), KnowledgeBase())
    learn_earlier(state, verdicts)
    assert len(state.earlier) == 30
    assert sorted(ms for _, ms in state.earlier if ms is not None) == sorted(ms for *_, ms in timed)
    second, run_dir = _run(tmp_path, "agent", seed=0, budget=12, run_id="second", warm=True)
    assert (run_dir / "warm_start_observations.json").exists()
    assert len(second.state.earlier) == 30


def test_the_nearest_untried_candidate_is_the_one_a_full_scan_finds():
    cache = load_foreign(PNPOLY)
    space = foreign_space(cache)
    label = next(iter(space.kernels))
    kernel = space.kernels[label]
    members = [c for c in space.all() if c.kernel == label]
    parent = members[len(members) // 2]
    rng = random.Random(5)
    tables = {name: {v: rng.uniform(-2, 2) for v in knob.values} for name, knob in kernel.knobs.items()}

    def logits(specialist: str, knob: str) -> dict[str, float]:
        assert specialist == kernel.knobs[knob].specialist
        return tables[knob]

    def score(c) -> float:
        return 0.25 * sum(tables[k][v] for k, v in c.knobs) - c.distance(parent)

    ranked = list(Neighbourhood(space, label).ranked(parent, logits, 0.25, random.Random(0)))
    assert sorted(ranked, key=lambda c: c.key) == sorted(members, key=lambda c: c.key)  # every member once
    scores = [score(c) for c in ranked]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(max(score(c) for c in members))
    again = list(Neighbourhood(space, label).ranked(parent, logits, 0.25, random.Random(0)))
    assert again == ranked  # ties are broken by the rng: the same seed, the same order


def test_the_agent_with_the_predictor_is_deterministic_and_stays_in_the_space(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, _ = _run(tmp_path / "a", "agent", seed=4, budget=80)
    second, _ = _run(tmp_path / "b", "agent", seed=4, budget=80)
    assert [a.candidate for a in first.state.attempts] == [a.candidate for a in second.state.attempts]
    space = foreign_space(load_foreign(PNPOLY))
    assert all(space.contains(a.candidate) for a in first.state.attempts)
    assert len({a.candidate for a in first.state.attempts}) == 80
    assert all(a.outcome.status in (Status.ok, Status.runtime_error) for a in first.state.attempts)
