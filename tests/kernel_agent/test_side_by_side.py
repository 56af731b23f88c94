"""`kagent replay-bench --cache`: kagent's strategies and kernel_tuner's over one recorded space, the
figures computed from their traces, and the files and table it writes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernel_agent.bench import kernel_tuner_runs
from kernel_agent.bench.side_by_side import StrategyResult, bench_cache, evaluations_to, quartiles, share_at
from kernel_agent.bench.side_by_side_report import verdicts, write
from kernel_agent.cli import app
from kernel_agent.foreign_cache import load_foreign
from sandbox import Status
from tests.kernel_agent.test_foreign_cache import small_cache


def test_shares_and_evaluations_to_the_target_are_read_off_a_trace():
    trace = [4.0, None, 2.0, 1.05, None, 1.0]
    assert share_at(trace, 1, 1.0) == 0.25
    assert share_at(trace, 3, 1.0) == 0.5  # a failure is an evaluation spent, with no time
    assert share_at(trace, 200, 1.0) == 1.0
    assert share_at([None, None], 2, 1.0) == 0.0
    assert evaluations_to(trace, 1.0 / 0.95) == 4  # 1.05 <= 1.0526
    assert evaluations_to(trace, 0.9) is None
    assert quartiles([3.0]) == (3.0, 3.0, 3.0)
    assert quartiles([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 3.0, 4.0)
    result = StrategyResult("x", "kagent", [trace, [4.0] * 6])
    assert result.to_target(1.0) == [4, None]
    assert result.median_to_target(1.0, budget=6) == (4 + 7) / 2  # a seed that never got there counts as 7


def test_our_strategies_search_only_the_recorded_configurations_within_the_budget(tmp_path):
    cache = load_foreign(small_cache(tmp_path))
    bench = bench_cache(cache, seeds=2, budget=10, ours=("agent", "agent-no-predictor", "random"), theirs=())
    recorded = {t for t in cache.results.values() if isinstance(t, float)}
    for result in bench.results:
        assert result.tuner == "kagent" and len(result.traces) == 2
        for trace in result.traces:
            assert 1 <= len(trace) <= 10
            assert trace[0] == cache.results[cache.default()]  # the run's baseline: the default configuration
            assert all(t is None or t in recorded for t in trace)
    # 22 configurations and a budget of 10: random search differs between seeds
    random = bench.result("random")
    assert random is not None and random.traces[0] != random.traces[1]


@pytest.mark.skipif(not kernel_tuner_runs.available(), reason="kernel_tuner is not installed")
def test_kernel_tuner_strategies_run_beside_ours_and_the_report_is_written(tmp_path):
    cache = load_foreign(small_cache(tmp_path))
    calls: list[tuple[str, int]] = []
    bench = bench_cache(cache, seeds=3, budget=12, ours=("agent", "agent-no-predictor"),
                        theirs=("random_sample", "genetic_algorithm"), on_run=lambda s, n: calls.append((s, n)))
    assert [r.name for r in bench.of("kernel_tuner")] == ["random_sample", "genetic_algorithm"]
    assert len(calls) == 4 * 3
    for result in bench.of("kernel_tuner"):
        assert all(1 <= len(t) <= 12 for t in result.traces)
    best = bench.best_of("kernel_tuner")
    assert best is not None
    lines = verdicts(bench)
    assert len(lines) == 2 and all(line.startswith("agent ") for line in lines)
    assert any(best.name in line for line in lines) and any("agent-no-predictor" in line for line in lines)
    written = write([bench], tmp_path / "out", kernel_tuner_runs.kernel_tuner_version())
    names = {p.name for p in written}
    assert {"report.md", "side_by_side.json"} <= names
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| random_sample | kernel_tuner |" in report and "evaluations to 95%" in report
    data = json.loads((tmp_path / "out" / "side_by_side.json").read_text())
    space = data["spaces"][0]
    assert space["configurations"] == 22 and space["optimum_ms"] == cache.best_ms
    assert [s["name"] for s in space["strategies"]] == ["agent", "agent-no-predictor", "random_sample",
                                                         "genetic_algorithm"]
    assert all(len(s["traces"]) == 3 for s in space["strategies"])


def _cli(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.skipif(not kernel_tuner_runs.available(), reason="kernel_tuner is not installed")
def test_replay_bench_with_a_cache_prints_the_table_and_writes_its_files(tmp_path):
    out = tmp_path / "rb"
    result = _cli("replay-bench", "--cache", small_cache(tmp_path), "--kernel-tuner", "random_sample",
                  "--seeds", 2, "--budget", 30, "--out", out)
    assert result.exit_code == 0, result.output
    assert "random_sample" in result.output and "agent-no-predictor" in result.output
    assert "small.json: random_sample, 2 seeds done" in result.output  # a line a strategy where no bar shows
    assert (out / "report.md").exists() and (out / "side_by_side.json").exists()


def test_replay_bench_refuses_a_bad_cache_and_an_unknown_strategy(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a cache"}')
    result = _cli("replay-bench", "--cache", bad, "--kernel-tuner", "none", "--out", tmp_path / "o")
    assert result.exit_code == 2 and "bad.json" in result.output
    assert not (tmp_path / "o").exists()
    if kernel_tuner_runs.available():
        result = _cli("replay-bench", "--cache", small_cache(tmp_path), "--kernel-tuner", "no_such_search",
                      "--out", tmp_path / "o")
        assert result.exit_code == 2 and "no_such_search" in result.output


WIDE_SAMPLES = Path(__file__).resolve().parents[1] / "data" / "h200" / "wide_samples"


@pytest.mark.parametrize("name", ["attention_wide", "matmul_fp32_wide", "maxpool2d_wide", "transpose_wide"])
def test_the_h200_samples_of_the_wide_spaces_read_as_recorded_spaces(name):
    """Each kept sample: 360 combinations, every failure classed as kagent classed it on the H200, and a
    short search of it stays within what was sampled."""
    path = WIDE_SAMPLES / f"{name}_H200_sample.json.gz"
    cache = load_foreign(path)
    assert cache.size == 360 and cache.device == "NVIDIA H200"
    entries = json.loads(gzip.decompress(path.read_bytes()))["cache"].values()
    statuses = {"compile_error": Status.compile_error, "resource_error": Status.launch_error,
                "launch_error": Status.launch_error}
    assert all(e["kagent_status"] in ("ok", *statuses) for e in entries)  # no wrong result was sampled
    for entry in entries:
        values = tuple(str(entry[k]) for k in cache.raw["tune_params_keys"])
        result = cache.results[values]
        assert isinstance(result, float) if entry["kagent_status"] == "ok" else result is statuses[
            entry["kagent_status"]]
    bench = bench_cache(cache, seeds=1, budget=15, ours=("agent",), theirs=())
    assert len(bench.results[0].traces[0]) == 15
