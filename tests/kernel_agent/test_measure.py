"""`kagent measure`: a compile-only run of the layernorm task (no GPU here) measured afterwards, with
the task's recorded H200 sweep standing in for the GPU (a ReplayExecutor); a model's kernel measured by
a small stand-in; the refusals. The real GPU run is tests/gpu/test_measure.py."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.optimize.executors import ReplayExecutor
from kernel_agent.optimize.measure import MeasureError, measure_run
from kernel_agent.optimize.rewards import rank_rewards
from kernel_agent.optimize.session import resume_run
from kernel_agent.recording import RECORDINGS
from sandbox import Outcome, Status, Timing
from tests.llm.fake_server import FakeOpenAI, answer
from tests.llm.test_optimize_llm import ROWBLOCK, baseline_only_task, config_file
from tests.paths import LAYERNORM, ROOT

RECORDING = RECORDINGS / "layernorm.json"
STAND_IN = "recorded H200 sweep (sm_90)"


def kagent(*args, env=None):
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def rows_of(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def compile_only(out, *extra):
    result = kagent("optimize", LAYERNORM, "--executor", "compile-only", "--out", out, "--no-llm", *extra)
    assert result.exit_code == 0, result.output
    (run_dir,) = (out / "layernorm").iterdir()
    return run_dir


def replayed(run):
    """The recorded sweep stands in for the GPU."""
    return lambda space: ReplayExecutor(run.task, space, RECORDING)


def measure(run_dir, again=False):
    run = resume_run(run_dir.parent.parent, str(run_dir))
    return measure_run(run, replayed(run), STAND_IN, again=again, notice=lambda text: None)


@pytest.fixture(scope="module")
def agent_run(tmp_path_factory):
    """A compile-only agent run (no model), made once; each test measures a copy of it."""
    return compile_only(tmp_path_factory.mktemp("agent") / "out", "--budget", 8)


def copy_of(run_dir, tmp_path):
    target = tmp_path / "out" / "layernorm" / run_dir.name
    shutil.copytree(run_dir, target)
    return target


def test_a_compile_only_run_is_measured_and_its_folder_completed(agent_run, tmp_path):
    run_dir = copy_of(agent_run, tmp_path)
    before = (run_dir / "attempts.jsonl").read_bytes()
    original = rows_of(run_dir / "attempts.jsonl")
    assert {r["status"] for r in original} == {"not_run"} and "Compiled only" in (run_dir / "report.md").read_text()

    measured = measure(run_dir)

    rows = rows_of(run_dir / "attempts.jsonl")
    assert [r["number"] for r in rows] == [r["number"] for r in original]
    assert [r["kernel"] for r in rows] == [r["kernel"] for r in original]
    assert all(r["status"] == "ok" and r["median_ms"] for r in rows)  # every not_run attempt has a real outcome
    assert len(measured.measured) == len(rows)
    assert (run_dir / "attempts.compile-only.jsonl").read_bytes() == before  # the original is kept
    # rank rewards batch by batch, recomputed here independently of the loop
    best = None
    for index in sorted({r["batch"] for r in rows}):
        batch = [r for r in rows if r["batch"] == index]
        if index == 0:
            assert [r["reward"] for r in batch] == [None]
        else:
            outcomes = [Outcome.model_validate(r["outcome"]) for r in batch]
            times = {json.dumps([r["kernel"], r["knobs"]]): r["median_ms"] for r in rows if r["batch"] < index}
            parents = [times.get(json.dumps(r["parent"])) if r["parent"] else None for r in batch]
            assert [r["reward"] for r in batch] == rank_rewards(outcomes, best, parents)
        best = min([best or float("inf"), *(r["median_ms"] for r in batch if r["median_ms"])])
    report = (run_dir / "report.md").read_text()
    final = measured.result.final
    assert "Compiled only" not in report and "measured afterwards on recorded H200 sweep" in report
    assert f"{final.speedup:.2f}x" in report and "faster than the library" in report
    assert "Credit by specialist" in report
    assert "Compiled only" in (run_dir / "report.compile-only.md").read_text()
    assert (run_dir / "best.cu").is_file() and (run_dir / "progress.png").is_file()
    config = json.loads((run_dir / "run.json").read_text())
    assert config["measured_on"] == STAND_IN and config["measured_at"] and config["executor"] == "compile-only"
    with sqlite3.connect(run_dir.parent.parent / "kagent.sqlite") as db:
        stored = db.execute("SELECT executor, status FROM attempts WHERE run_id = ?", (run_dir.name,)).fetchall()
        run_row = db.execute("SELECT executor, best_speedup FROM runs WHERE id = ?", (run_dir.name,)).fetchone()
    assert stored == [("gpu", "ok")] * len(rows) and run_row == ("gpu", final.speedup)

    with pytest.raises(MeasureError, match=r"measured already.*--again"):
        measure(run_dir)
    result = kagent("measure", run_dir, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "--again" in result.output
    resumed = kagent("optimize", "--resume", run_dir, "--out", tmp_path / "out")
    assert resumed.exit_code == 2 and "measured" in resumed.output  # its search cannot go on
    again = measure(run_dir, again=True)  # from the kept compile-only journal
    assert len(again.measured) == len(measured.measured)
    assert (run_dir / "attempts.compile-only.jsonl").read_bytes() == before
    assert [r["reward"] for r in rows_of(run_dir / "attempts.jsonl")] == [r["reward"] for r in rows]


@pytest.mark.parametrize("old_journal", [False, True])
def test_rewards_are_what_the_loop_gives_a_run_that_proposed_the_same(tmp_path, old_journal):
    """The random strategy proposes the same candidates with or without timings: the measured run's
    journal is the replayed run's, attempt for attempt (a journal without batches is cut by --batch)."""
    run_dir = compile_only(tmp_path / "c", "--strategy", "random", "--budget", 14, "--seed", 3, "--batch", 4)
    assert kagent("optimize", LAYERNORM, "--executor", "replay", "--strategy", "random", "--budget", 14, "--seed", 3,
                  "--batch", 4, "--out", tmp_path / "r", "--no-warm-start").exit_code == 0
    if old_journal:
        rows = rows_of(run_dir / "attempts.jsonl")
        (run_dir / "attempts.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "batch"})
                                                        + "\n" for r in rows))
    measure(run_dir)
    (replay_dir,) = (tmp_path / "r" / "layernorm").iterdir()
    ours, theirs = rows_of(run_dir / "attempts.jsonl"), rows_of(replay_dir / "attempts.jsonl")
    assert [r["batch"] for r in theirs] == [0, *[1] * 4, *[2] * 4, *[3] * 4, 4]
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in ours] == \
        [{k: v for k, v in r.items() if k != "seconds"} for r in theirs]


def test_damaged_missing_and_other_runs_are_refused(agent_run, tmp_path):
    damaged = copy_of(agent_run, tmp_path / "a")
    lines = (damaged / "attempts.jsonl").read_text().splitlines()
    (damaged / "attempts.jsonl").write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    with pytest.raises(MeasureError, match=r"journal is damaged.*line 2"):
        measure(damaged)
    assert kagent("measure", damaged, "--out", tmp_path / "a" / "out").exit_code == 2

    missing = copy_of(agent_run, tmp_path / "b")
    rows = rows_of(missing / "attempts.jsonl")
    rows[-1]["kernel"] = "llm1"
    (missing / "attempts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(MeasureError, match=r"kernel llm1.*llm_kernels/llm1\.cu is missing"):
        measure(missing)

    assert kagent("optimize", LAYERNORM, "--executor", "replay", "--budget", 3, "--out", tmp_path / "r").exit_code == 0
    (replay_dir,) = (tmp_path / "r" / "layernorm").iterdir()
    with pytest.raises(MeasureError, match=r"replay executor.*compile-only run"):
        measure(replay_dir)
    result = kagent("measure", replay_dir.name, "--out", tmp_path / "r")  # a run id under --out
    assert result.exit_code == 2 and "compile-only" in result.output
    assert kagent("measure", "no-such-run", "--out", tmp_path / "r").exit_code == 2
    for folder in (damaged, missing):  # nothing was written
        assert not (folder / "attempts.compile-only.jsonl").exists()


def test_the_command_explains_itself_and_needs_a_gpu(agent_run, tmp_path):
    from tests.conftest import GPU

    result = kagent("measure", "--help")
    said = " ".join(result.output.split())
    assert result.exit_code == 0 and "compile-only" in said and "GPU" in said and "trajectory" in said
    assert "--again" in said and "--device" in said
    module = subprocess.run([sys.executable, "-m", "kernel_agent", "measure", "--help"], capture_output=True,
                            text=True, cwd=ROOT, timeout=120)
    assert module.returncode == 0 and "Measure a compile-only run" in " ".join(module.stdout.split())
    if GPU:
        pytest.skip("this machine has a GPU")
    run_dir = copy_of(agent_run, tmp_path)
    result = kagent("measure", run_dir, "--out", tmp_path / "out")
    assert result.exit_code == 3 and "no CUDA GPU found" in result.output
    assert not (run_dir / "attempts.compile-only.jsonl").exists()


def _ok(ms: float, speedup: float | None = None) -> Outcome:
    timing = Timing(median_ms=ms, p10_ms=ms, p90_ms=ms, min_ms=ms, max_ms=ms, repetitions=5)
    return Outcome(status=Status.ok, timing=timing, speedup=speedup, message="checked and timed")


class _StandInGpu:
    """A GPU stand-in that times the baseline at 2 ms and every kernel at 0.5 ms."""

    name = "gpu"

    def start(self):
        return _ok(2.0, 1.0)

    def evaluate(self, candidates):
        return [(_ok(0.5, 4.0), 0.1) for _ in candidates]

    def final(self, candidate):
        outcome = _ok(0.5, 4.0)
        outcome.library_timing, outcome.library_speedup = _ok(1.0).timing, 2.0
        return outcome


def test_a_model_kernel_is_measured_into_the_trajectory_and_the_report(tmp_path):
    config = config_file(tmp_path, timeout_s=5.0, max_attempts=2)
    with FakeOpenAI([answer(f"```cuda\n{ROWBLOCK}```")]) as server:  # then the same kernel: refused as a duplicate
        result = kagent("optimize", baseline_only_task(tmp_path), "--executor", "compile-only", "--budget", 6,
                        "--out", tmp_path / "out", "--llm", "test-model", "--llm-base-url", server.base_url,
                        "--no-llm-port", env={"KAGENT_CONFIG": str(config), "OPENAI_API_KEY": ""})
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out" / "layernorm").iterdir()
    assert [r["kernel"] for r in rows_of(run_dir / "attempts.jsonl")] == ["baseline", "llm1"]
    report = (run_dir / "report.md").read_text()
    assert re.search(r"\| planner \| 0 \| \d+ \| 1 \| 1 \| 0 \| 0 \| 0 \|", report)  # parsed and built, not run

    run = resume_run(tmp_path / "out", str(run_dir))
    measured = measure_run(run, lambda space: _StandInGpu(), "stand-in", notice=lambda text: None)
    assert [a.candidate.kernel for a in measured.measured] == ["baseline", "llm1"]
    rows = rows_of(run_dir / "trajectory.jsonl")
    (call,) = [r for r in rows if r["type"] == "call" and r["kernel"] == "llm1"]
    results = [r for r in rows if r["type"] == "result"]
    assert [(r["call"], r["number"], r["status"], r.get("measured")) for r in results] == \
        [(call["call"], 2, "not_run", None), (call["call"], 2, "ok", True)]
    assert results[-1]["median_ms"] == 0.5 and results[-1]["speedup"] == 4.0 and results[-1]["reward"] == 1.25
    report = (run_dir / "report.md").read_text()
    assert re.search(r"\| planner \| 0 \| \d+ \| 1 \| 1 \| 1 \| 1 \| 1 \|", report)  # correct, faster, a new best
    assert "test-model" in report and "4.00x" in report and "2.00x faster than the library" in report
