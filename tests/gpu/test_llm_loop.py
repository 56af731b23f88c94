"""The LLM loop on a real GPU: the fake OpenAI-compatible server serves scripted and recorded
real-model answers, and every kernel they produce is compiled, run, checked and ranked for real."""

from __future__ import annotations

import json

import pytest

from tests.llm.fake_server import FakeOpenAI, answer
from tests.llm.test_optimize_llm import (
    ROWBLOCK,
    baseline_only_task,
    config_file,
    optimize,
    recorded_sessions,
)
from tests.paths import ROOT

pytestmark = pytest.mark.gpu

BIASED_VARIANCE = "/ (float)cols + eps"  # the line a classic mistake changes


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_wrong_kernel_is_caught_repaired_with_evidence_and_wins(tmp_path):
    assert BIASED_VARIANCE in ROWBLOCK
    wrong = ROWBLOCK.replace(BIASED_VARIANCE, "/ (float)(cols - 1) + eps")  # unbiased variance: wrong
    script = [answer(f"```cuda\n{wrong}```"), answer(f"The variance divides by cols:\n```cuda\n{ROWBLOCK}```")]
    config = config_file(tmp_path, timeout_s=30.0, max_attempts=2)
    with FakeOpenAI(script) as server:
        result = optimize(baseline_only_task(tmp_path), tmp_path / "out", server.base_url, config,
                          "--budget", 10, "--no-llm-port", executor="gpu")  # whole kernels here
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out" / "layernorm").iterdir()
    rows = lines(run_dir / "trajectory.jsonl")
    verdicts = {r["kernel"]: r["status"] for r in rows if r["type"] == "result"}
    assert verdicts["llm1"] == "wrong_result" and verdicts["llm2"] == "ok"
    repair = next(r for r in rows if r["type"] == "call" and r["round"] == 1)["messages"][-1]["content"]
    assert "max abs error" in repair.lower() and "first wrong index" in repair.lower()
    attempts = lines(run_dir / "attempts.jsonl")
    best = min((a for a in attempts if a["median_ms"]), key=lambda a: a["median_ms"])
    assert best["kernel"].startswith("llm") and best["speedup"] > 5
    assert "Replayed timings" not in (run_dir / "report.md").read_text()


@pytest.mark.parametrize("fixture", recorded_sessions(), ids=lambda p: p.stem)
def test_recorded_model_answers_run_the_full_loop(tmp_path, fixture, capsys):
    """A real model's recorded answers, served again: the kernels that compile now run, are checked
    and ranked (on replay they could only be `not_run`). Prints the report's LLM table."""
    rows = lines(fixture)
    meta, calls = rows[0], [r for r in rows if r["type"] == "call"]
    script = [answer(c["text"], finish_reason=c["finish_reason"] or "stop") for c in calls]
    config = config_file(tmp_path, timeout_s=30.0, max_attempts=1)
    with FakeOpenAI(script, repeat_last=False) as server:
        result = optimize(ROOT / meta["task"], tmp_path / "out", server.base_url, config, *meta["args"],
                          executor="gpu")
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out" / meta["task_name"]).iterdir()
    again = lines(run_dir / "trajectory.jsonl")
    assert [r for r in again if r["type"] == "call"], "no LLM call was made"
    verdicts = [r["status"] for r in again if r["type"] == "result"]
    assert "not_run" not in verdicts  # on the GPU every kernel that compiled was run
    attempts = lines(run_dir / "attempts.jsonl")
    assert attempts and all(a["status"] != "not_run" for a in attempts)
    report = (run_dir / "report.md").read_text()
    assert "## LLM" in report
    with capsys.disabled():
        print(f"\n--- {fixture.stem}: verdicts {verdicts}\n" + report[report.index("## LLM"):])
