"""`kagent bench` without a GPU: a suite on the recorded H200 sweeps, a folder of ready-made kernels
(correct, wrong, not compiling, hanging, missing), --optimize, resume, lanes and bad input."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import signal
import time

import pytest
from typer.testing import CliRunner

from kernel_agent.bench import evaluate, lanes
from kernel_agent.bench.options import BenchConfig
from kernel_agent.bench.results import TaskResult
from kernel_agent.cli import app
from kernel_agent.recording import RECORDINGS, SweepCache
from kernel_agent.task import load_task
from sandbox import Status, load_kernel
from tests.paths import ROOT

LEVEL1, LEVEL2 = ROOT / "tasks" / "level1", ROOT / "tasks" / "level2"
BROKEN_KERNELS = ROOT / "tests" / "data" / "bench_kernels"  # the wrong, broken and hanging ones


def ready_made(folder):
    """The --kernels folder another system would hand in: tests/data/bench_kernels (wrong, not
    compiling, hanging) plus the task's own vec.cu as the correct add.cu."""
    shutil.copytree(BROKEN_KERNELS, folder)
    shutil.copy(LEVEL1 / "add" / "vec.cu", folder / "add.cu")
    return folder
MIXED = ["add", "gelu", "softmax", "row_sum", "transpose"]  # transpose has no file: missing


def kagent(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def bench_dir(out):
    (folder,) = [p for p in out.iterdir() if (p / "bench.json").exists()]
    return folder


def read(folder):
    doc = json.loads((folder / "results.json").read_text())
    rows = list(csv.DictReader(io.StringIO((folder / "results.csv").read_text())))
    return doc, {t["task"]: t for t in doc["tasks"]}, {r["task"]: r for r in rows}, (folder / "report.md").read_text()


def recorded_as_written(name: str, variant_file: str):
    """The recorded outcome of a variant with the knob values its file declares, beside the baseline."""
    cache = SweepCache.model_validate_json((RECORDINGS / f"{name}.json").read_text())
    task = load_task(next(p for p in (LEVEL1 / f"{name}.yaml", LEVEL2 / f"{name}.yaml") if p.exists()))
    defaults = load_kernel(task.root / variant_file).knobs
    record = next(r for r in cache.records if r.file == variant_file and r.knobs == defaults)
    return cache.beside_baseline(record)


def test_a_suite_as_written_on_the_recorded_sweeps(tmp_path):
    result = kagent("bench", LEVEL2, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert "replaying the recorded H200 sweeps" in " ".join(result.output.split())
    lane_line = next(line for line in result.output.splitlines() if "replay: done" in line)
    assert "0/?" not in lane_line and "━" not in lane_line  # a lane shows its task and clock, no count
    folder = bench_dir(tmp_path)
    doc, tasks, rows, report = read(folder)
    names = sorted(p.stem for p in LEVEL2.glob("*.yaml"))
    assert sorted(tasks) == names and all(t["status"] == "ok" and t["replayed"] for t in tasks.values())
    speedups = []
    for name in names:
        task = load_task(LEVEL2 / f"{name}.yaml")
        ((label, variant),) = [(k, v) for k, v in task.variants.items()]
        expected = recorded_as_written(name, variant)
        got = tasks[name]
        assert got["kernel"] == f"{label} (as written)"
        assert got["time_ms"] == expected.timing.median_ms
        assert got["baseline_ms"] == expected.baseline_timing.median_ms
        assert got["speedup"] == pytest.approx(expected.baseline_timing.median_ms / expected.timing.median_ms)
        assert got["roofline_fraction"] == pytest.approx(expected.roofline.fraction)
        assert float(rows[name]["speedup"]) == pytest.approx(got["speedup"])
        speedups.append(got["speedup"])
    m = doc["metrics"]
    assert m["tasks"] == 6 and m["correctness"] == 1.0 and m["replayed"] == 6 and m["failures"] == {}
    assert m["geomean_speedup"] == pytest.approx(math.exp(sum(map(math.log, speedups)) / 6))
    assert m["fast"]["fast_2"] == pytest.approx(sum(s > 2 for s in speedups) / 6)
    assert doc["environment"]["recorded on"] == "NVIDIA H200"
    assert "**Replayed timings" in report and "| correctness rate | 100.0% (6 of 6) |" in report
    assert (folder / "speedups.png").read_bytes().startswith(b"\x89PNG")


def test_ready_made_kernels_correct_wrong_broken_hanging_and_missing(tmp_path):
    """Without a GPU: the correct file is answered from its recording, the one that does not compile
    fails to compile, the wrong and the hanging ones compile but cannot be run (`not_run`), the
    missing one is `not_run` too. (tests/gpu/test_bench.py runs the same folder on a GPU.)"""
    kernels = ready_made(tmp_path / "kernels")
    result = kagent("bench", *[LEVEL1 / f"{n}.yaml" for n in MIXED], "--kernels", kernels, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    doc, tasks, rows, report = read(bench_dir(tmp_path))
    assert {n: t["status"] for n, t in tasks.items()} == {
        "add": "ok", "gelu": "not_run", "softmax": "compile_error", "row_sum": "not_run", "transpose": "not_run"}
    assert "total" in tasks["softmax"]["message"] and "no kernel file transpose.cu" in tasks["transpose"]["message"]
    expected = recorded_as_written("add", "add/vec.cu")
    add = tasks["add"]
    assert add["replayed"] and add["time_ms"] == expected.timing.median_ms
    assert add["library_ms"] == expected.library_timing.median_ms
    speedup = expected.baseline_timing.median_ms / expected.timing.median_ms
    library_speedup = expected.library_timing.median_ms / expected.timing.median_ms
    m = doc["metrics"]
    assert (m["tasks"], m["correct"], m["correctness"]) == (5, 1, 0.2)
    assert m["fast"] == {"fast_0": 0.2, "fast_1": 0.2 if speedup > 1 else 0.0,
                         "fast_1.5": 0.2 if speedup > 1.5 else 0.0, "fast_2": 0.2 if speedup > 2 else 0.0}
    # every task has a library function: as KernelBench's fast_p, the four that failed count as not fast
    assert m["library_tasks"] == 5
    assert m["fast_library"]["fast_1"] == (0.2 if library_speedup > 1 else 0.0)
    assert m["geomean_speedup"] == pytest.approx(speedup)
    assert m["failures"] == {"compile_error": 1, "not_run": 3}
    assert rows["softmax"]["status"] == "compile_error" and rows["add"]["replayed"] == "true"
    assert "| correctness rate | 20.0% (1 of 5) |" in report and "- compile_error: 1" in report
    assert f"| add | ok | `{kernels / 'add.cu'}` |" in report


def test_optimize_each_task_within_the_budget_and_resume(tmp_path):
    tasks = [LEVEL2 / "bias_gelu.yaml", LEVEL2 / "l2_normalize.yaml"]
    result = kagent("bench", *tasks, "--optimize", "--budget", 8, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    folder = bench_dir(tmp_path)
    doc, got, _, report = read(folder)
    for name in ("bias_gelu", "l2_normalize"):
        assert got[name]["status"] == "ok" and got[name]["evaluations"] == 8 and got[name]["speedup"] >= 1.0
        (run_dir,) = (folder / "optimize" / name).iterdir()
        assert (run_dir / "best.cu").exists() and len((run_dir / "attempts.jsonl").read_text().splitlines()) == 8
    assert "budget" in doc["environment"] and "optimize" in report

    # Interrupted after the first task: its result stays, the second is run again from its journal.
    (folder / "tasks" / "l2_normalize.json").unlink()
    lanes.Bench(BenchConfig.load(folder), folder).write_report()
    partial = json.loads((folder / "results.json").read_text())
    assert partial["unfinished"] == ["l2_normalize"] and partial["metrics"]["tasks"] == 1
    assert "**Partial: 1 of 2 tasks not finished (l2_normalize)" in (folder / "report.md").read_text()
    first = (folder / "tasks" / "bias_gelu.json").read_text()
    again = kagent("bench", "--resume", folder.name, "--out", tmp_path)
    assert again.exit_code == 0, again.output
    assert "resuming" in again.output and "bias_gelu:" not in again.output
    assert (folder / "tasks" / "bias_gelu.json").read_text() == first
    resumed_doc, resumed, _, _ = read(folder)
    assert resumed_doc["unfinished"] == []
    assert resumed["l2_normalize"]["speedup"] == pytest.approx(got["l2_normalize"]["speedup"])
    assert len(list((folder / "optimize" / "l2_normalize").iterdir())) == 1  # the same run, resumed


def test_optimize_searches_with_timing_sized_to_the_noise_and_check_spends_the_budget(tmp_path, monkeypatch):
    """bench --optimize times its searched candidates as `kagent optimize` does; the check mode's figures
    (and an optimize run's final ones, in GpuExecutor.full) spend the whole budget."""
    from kernel_agent.bench import evaluate
    from kernel_agent.optimize.executors import SEARCH_PRECISION

    seen = []
    real = evaluate.execute

    def recorded(run, settings, *args, **kwargs):
        seen.append(settings)
        return real(run, settings, *args, **kwargs)

    monkeypatch.setattr(evaluate, "execute", recorded)
    result = kagent("bench", LEVEL2 / "bias_gelu.yaml", "--optimize", "--budget", 4, "--budget-ms", 50,
                    "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert [(s.budget_ms, s.precision) for s in seen] == [(50, SEARCH_PRECISION)]
    lane = lanes.Bench(BenchConfig.load(bench_dir(tmp_path)), bench_dir(tmp_path)).lanes[0]
    assert (lane.settings.budget_ms, lane.settings.precision) == (50, 0)  # what the check mode measures with


class FakeWorker:
    def __init__(self, device):
        self.device, self.info = device, {"name": "Fake GPU", "arch": "sm_90", "driver": "0.0"}

    def start(self):
        return self.info

    def close(self):
        pass


def test_tasks_are_spread_over_the_gpus_and_a_crash_costs_only_its_task(tmp_path, monkeypatch):
    """Two lanes (fake GPUs): both take tasks; one task's evaluation raising does not stop the rest."""
    monkeypatch.setattr(evaluate, "GpuWorker", FakeWorker)
    seen = {}

    def fake_as_written(task, level, lane):
        seen.setdefault(lane.device, []).append(task.name)
        time.sleep(0.05)
        if task.name == "gelu":
            raise RuntimeError("the worker died")
        return TaskResult(task=task.name, level=level, mode="as-written", kernel="k", status=Status.ok,
                          time_ms=1.0, baseline_ms=2.0, gpu=lane.device)

    monkeypatch.setattr(lanes, "as_written", fake_as_written)
    config = BenchConfig(run_id="t", paths=[str(LEVEL1)], mode="as-written", executor="gpu", gpus=[0, 1])
    (tmp_path / "t").mkdir()
    results = lanes.Bench(config, tmp_path / "t").run()
    assert len(results) == len(list(LEVEL1.glob("*.yaml"))) and set(seen) == {0, 1}
    by_task = {r.task: r for r in results}
    assert by_task["gelu"].status is Status.runtime_error and "the worker died" in by_task["gelu"].message
    assert all(r.status is Status.ok for r in results if r.task != "gelu")
    assert "RuntimeError" in (tmp_path / "t" / "tasks" / "gelu.error.txt").read_text()
    assert json.loads((tmp_path / "t" / "results.json").read_text())["environment"]["name"] == "Fake GPU"


def test_an_interrupt_drops_the_tasks_in_flight_and_resume_redoes_them(tmp_path, monkeypatch, request):
    """Ctrl-C while both lanes are inside an evaluation: the workers are killed at once, nothing is
    written for the interrupted tasks (their killed workers are not their kernels' fault), the lanes
    end, and --resume does every task."""
    import _thread
    import functools
    import threading

    from sandbox import GpuWorker
    from tests.sandbox import fake_workers

    monkeypatch.setattr(evaluate, "GpuWorker", functools.partial(GpuWorker, target=fake_workers.busy))
    # a runner that starts pytest in the background (`cmd &` in a script) leaves SIGINT ignored, and then
    # Python has no handler for interrupt_main() to call: give it the usual one for this test
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    in_flight = threading.Semaphore(0)

    def busy_as_written(task, level, lane):
        worker = lane.gpu()
        in_flight.release()
        worker.call("evaluate", {}, 120.0)
        return TaskResult(task=task.name, level=level, mode="as-written", kernel="k", status=Status.ok,
                          time_ms=1.0, baseline_ms=2.0, gpu=lane.device)

    def interrupt_when_both_lanes_are_busy():
        for _ in range(2):
            in_flight.acquire(timeout=60)
        time.sleep(0.2)
        _thread.interrupt_main()

    monkeypatch.setattr(lanes, "as_written", busy_as_written)
    config = BenchConfig(run_id="t", paths=[str(LEVEL1)], mode="as-written", executor="gpu", gpus=[0, 1])
    folder = tmp_path / "t"
    folder.mkdir()
    bench = lanes.Bench(config, folder)
    threading.Thread(target=interrupt_when_both_lanes_are_busy, daemon=True).start()
    began = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        bench.run()
    assert time.perf_counter() - began < 30  # not the minute each evaluation would take
    assert all(lane.worker is None for lane in bench.lanes)
    assert not (folder / "tasks").exists() or not any((folder / "tasks").iterdir())

    monkeypatch.setattr(lanes, "as_written", lambda task, level, lane: TaskResult(
        task=task.name, level=level, mode="as-written", kernel="k", status=Status.ok, time_ms=1.0,
        baseline_ms=2.0, gpu=lane.device))
    monkeypatch.setattr(evaluate, "GpuWorker", FakeWorker)
    results = lanes.Bench(config, folder).run()
    assert len(results) == len(list(LEVEL1.glob("*.yaml")))
    assert all(r.status is Status.ok for r in results)


@pytest.mark.parametrize("args, code, message", [
    (["--optimize", "--kernels", BROKEN_KERNELS], 2, "choose one"),
    (["--budget", "0", "--optimize"], 2, "Invalid value for '--budget': Input should be greater than or equal to 1"),
    (["--kernels", "/nonexistent"], 2, "not a folder"),
    (["--gpus", "0"], 3, "no CUDA GPU is visible"),
    (["--gpus", "x"], 2, "GPU indices"),
    (["--executor", "gpu"], 3, "no CUDA GPU"),
    (["--optimize", "--strategy", "nope"], 2, "unknown strategy"),
])
def test_bad_input_is_a_clear_message(tmp_path, args, code, message):
    result = kagent("bench", LEVEL2 / "bias_gelu.yaml", *args, "--out", tmp_path)
    assert result.exit_code == code, result.output
    assert message in " ".join(result.output.split())


def test_missing_suite_and_unknown_resume(tmp_path):
    assert kagent("bench", tmp_path / "nope", "--out", tmp_path).exit_code == 2
    assert kagent("bench", "--out", tmp_path).exit_code == 2
    result = kagent("bench", "--resume", "nope", "--out", tmp_path)
    assert result.exit_code == 2 and "no bench folder" in result.output


def test_optimize_with_an_llm_endpoint(tmp_path):
    """With --llm, every task's search asks the endpoint (here the scripted fake server)."""
    from tests.llm.fake_server import FakeOpenAI, answer

    with FakeOpenAI([answer("Try vector loads.")]) as server:
        result = kagent("bench", LEVEL2 / "bias_gelu.yaml", "--optimize", "--budget", 6, "--out", tmp_path,
                        "--llm", "test-model", "--llm-base-url", server.base_url)
        asked = len(server.requests)
    assert result.exit_code == 0, result.output
    (run_dir,) = (bench_dir(tmp_path) / "optimize" / "bias_gelu").iterdir()
    calls = [json.loads(line) for line in (run_dir / "trajectory.jsonl").read_text().splitlines()]
    assert asked >= 1 and calls and calls[0]["parsed"] == "none"
    assert json.loads((bench_dir(tmp_path) / "bench.json").read_text())["llm"]["model"] == "test-model"
