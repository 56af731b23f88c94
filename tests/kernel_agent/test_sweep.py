"""`kagent sweep`: every knob combination, recorded, resumable; the GPU path through a fake worker."""

import json
import threading

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.recording import SweepCache
from kernel_agent.sweep import candidates, sweep
from sandbox import Evaluator, GpuWorker, Settings, Status
from tests.paths import LAYERNORM
from tests.sandbox import fake_workers


def test_candidates_cover_every_combination_baseline_first(layernorm):
    chosen = candidates(layernorm)
    assert chosen[0][0] == "baseline" and len(chosen) == 1 + 4 * 3 * 3
    knob_sets = {tuple(sorted(k.knobs.items())) for label, k in chosen if label == "rowblock"}
    assert len(knob_sets) == 36
    with pytest.raises(KeyError, match="no variant 'nope'"):
        candidates(layernorm, "nope")


def test_compile_only_sweep_resumes_after_an_interruption(layernorm, tmp_path, monkeypatch):
    out = tmp_path / "sweep.json"

    def interrupt(record, number, total):
        if number == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(layernorm, LAYERNORM, out, arch="sm_90", on_result=interrupt)
    assert len(SweepCache.model_validate_json(out.read_text()).records) == 5
    compiled = []
    build = Evaluator.build

    def counted(self, kernels, *args):
        if len(kernels) > 1:  # the sweep's chunks, not evaluate()'s own build of one kernel
            compiled.extend(kernels)
        return build(self, kernels, *args)

    monkeypatch.setattr(Evaluator, "build", counted)
    cache = sweep(layernorm, LAYERNORM, out, arch="sm_90")
    assert len(compiled) == 37 - 5  # the sweep's compiles leave out what was recorded
    ids = [r.outcome.candidate_id for r in cache.records]
    assert len(ids) == 37 and len(set(ids)) == 37
    record = json.loads(out.read_text())
    assert record["format"] == "kagent-sweep/1" and record["executor"] == "compile-only"
    assert record["compiler"]["nvrtc"] and record["arch"] == "sm_90"


def test_the_space_compiles_a_chunk_at_a_time_the_next_while_this_one_runs(layernorm, tmp_path, monkeypatch):
    """Each chunk is compiled before its first run, and the next chunk compiles while this one runs (the
    sandbox's timing gate keeps that load out of the timed regions)."""
    monkeypatch.setattr("kernel_agent.sweep.chunk_size", lambda: 10)
    events: list[tuple[str, int]] = []
    lock = threading.Lock()
    build = Evaluator.build

    def counted(self, kernels, *args):
        if len(kernels) == 1:  # evaluate()'s own build of its kernel, from the compile cache
            return build(self, kernels, *args)
        with lock:
            events.append(("start", len(kernels)))
        result = build(self, kernels, *args)
        with lock:
            events.append(("end", len(kernels)))
        return result

    def ran(record, number, total):
        with lock:
            events.append(("ran", number))

    monkeypatch.setattr(Evaluator, "build", counted)
    cache = sweep(layernorm, LAYERNORM, tmp_path / "s.json", arch="sm_90", on_result=ran)
    assert len(cache.records) == 37
    assert [n for kind, n in events if kind == "start"] == [10, 10, 10, 7]
    position = {event: i for i, event in enumerate(events)}
    ends = [i for i, (kind, _) in enumerate(events) if kind == "end"]
    starts = [i for i, (kind, _) in enumerate(events) if kind == "start"]
    for chunk in range(4):
        assert ends[chunk] < position[("ran", 10 * chunk + 1)]  # compiled before its first run
    for chunk in range(3):
        assert starts[chunk + 1] < position[("ran", 10 * chunk + 10)]  # the next one compiling meanwhile


def test_gpu_sweep_records_speedups_against_the_baseline(layernorm, tmp_path):
    with GpuWorker(target=fake_workers.timed) as worker:
        cache = sweep(layernorm, LAYERNORM, tmp_path / "s.json", "rowblock", worker, "sm_90", Settings())
    assert cache.executor == "gpu" and cache.gpu["name"] == "Fake GPU"
    assert cache.ceilings == {"copy_gbps": 1000.0, "fma_gflops": 10000.0}
    assert cache.baseline_timing["median_ms"] == 2.0
    variants = [r for r in cache.records if r.kernel == "rowblock"]
    assert len(variants) == 36 and all(r.outcome.speedup == pytest.approx(2.0) for r in variants)
    assert all(r.outcome.status is Status.ok and r.outcome.roofline.bandwidth_gbps == 1000.0 for r in variants)


def test_a_cache_of_another_kind_is_not_mixed_in(layernorm, tmp_path):
    out = tmp_path / "s.json"
    out.write_text(SweepCache(task="other", task_file="x", created="now", executor="compile-only",
                              arch="sm_90", compiler={}).model_dump_json())
    with pytest.raises(ValueError, match="choose another --out"):
        sweep(layernorm, LAYERNORM, out, arch="sm_90")


def test_sweep_command_compile_only(tmp_path):
    out = tmp_path / "s.json"
    result = CliRunner().invoke(app, ["sweep", str(LAYERNORM), "--compile-only", "--arch", "sm_90",
                                      "--variant", "rowblock", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "37 candidates recorded" in result.output


def test_suite_table_from_the_recorded_sweeps():
    from tests.conftest import GPU

    result = CliRunner().invoke(app, ["suite-table", "--recorded"])
    assert result.exit_code == 0, result.output
    for words in ("layernorm", "rowblock", "speedup", "vs library"):
        assert words in result.output
    if not GPU:
        result = CliRunner().invoke(app, ["suite-table"])
        assert result.exit_code == 3 and "--recorded" in result.output
