"""The whole LLM loop on a machine without a GPU, on a task without any recording: `optimize` picks
the compile-only executor by itself, the model's kernels are compiled and launch-planned for real and
left not_run, a renamed copy of the parent is "no new answer", a compile error is repaired, no prompt
is sent twice, and no evaluation goes to knob variants of a kernel nobody measured."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from tests.llm.fake_server import FakeOpenAI, answer
from tests.llm.test_optimize_llm import config_file
from tests.paths import ROOT

SOFTMAX = ROOT / "tasks" / "level1" / "softmax"
EXPERT = (SOFTMAX / "rowblock.cu").read_text()

WARP_PER_ROW = """\
// @kagent entry: softmax_warp
// @kagent grid: ceil_div(rows, 8)
// @kagent block: 32, 8
// @kagent smem: 0
__global__ void softmax_warp(const float* x, float* y, int rows, int cols) {
    int row = blockIdx.x * 8 + threadIdx.y;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += 32) m = fmaxf(m, xr[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += 32) s += expf(xr[c] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    for (int c = threadIdx.x; c < cols; c += 32) yr[c] = expf(xr[c] - m) / s;
}
"""
BROKEN = WARP_PER_ROW.replace("s += expf(xr[c] - m);", "s += expf(xr[c] - mx);")


def renamed_parent() -> str:
    """The naive kernel with its names, comments, spacing and launch numbers changed: the same kernel."""
    text = (SOFTMAX / "naive.cu").read_text()
    text = re.sub(r"(?m)^//(?! @kagent).*$", "// my faster softmax", text)
    for old, new in (("xr", "in_row"), ("yr", "out_row"), (r"\bsum\b", "total"), (r"\bm\b", "row_max"),
                     (r"\bc\b", "j"), ("block: 256", "block: 128"), ("rows, 256", "rows, 128")):
        text = re.sub(old, new, text)
    return text.replace("    ", "  ")


def task_without_recording(tmp_path):
    """Softmax with only its naive kernel, under a name no recording has."""
    folder = tmp_path / "task"
    shutil.copytree(SOFTMAX, folder / "softmax")
    text = (SOFTMAX.parent / "softmax.yaml").read_text()
    text = text.replace("name: softmax", "name: softmax_unrecorded").split("variants:")[0]
    (folder / "softmax_unrecorded.yaml").write_text(text)
    return folder / "softmax_unrecorded.yaml"


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr("kernel_agent.optimize.session.detect_arch", lambda device=0: None)


def test_the_llm_loop_runs_without_a_gpu_or_a_recording(tmp_path, no_gpu):
    script = [
        answer(f"A faster softmax:\n```cuda\n{renamed_parent()}```"),  # the parent again: no new answer
        answer(f"One block per row:\n```cuda\n{EXPERT}```"),  # the re-ask: a new structure
        answer(f"One warp per row:\n```cuda\n{BROKEN}```"),  # does not compile
        answer(f"`mx` was a typo:\n```cuda\n{WARP_PER_ROW}```"),  # the repair
        answer(f"```cuda\n{WARP_PER_ROW}```"),  # from here on the same again: refused
    ]
    config = config_file(tmp_path, timeout_s=5.0, max_attempts=1)
    with FakeOpenAI(script) as server:
        result = CliRunner().invoke(app, [
            "optimize", str(task_without_recording(tmp_path)), "--out", str(tmp_path / "out"), "--budget", "8",
            "--llm", "test-model", "--llm-base-url", server.base_url, "--no-warm-start",
            "--no-llm-port"],  # whole kernels here; porting without a GPU: test_porting.py
            env={"KAGENT_CONFIG": str(config), "OPENAI_API_KEY": ""})
        requests = list(server.requests)
    said = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "no recorded sweep of softmax_unrecorded" in said and "compile-only" in said
    (run_dir,) = (tmp_path / "out" / "softmax_unrecorded").iterdir()
    assert json.loads((run_dir / "run.json").read_text())["executor"] == "compile-only"

    attempts = [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]
    verdicts = [(a["kernel"], a["status"]) for a in attempts]
    assert verdicts[:4] == [("baseline", "not_run"), ("llm1", "not_run"), ("llm2", "compile_error"),
                            ("llm3", "not_run")]
    # every kernel is tried as written, once: no knob variants of kernels nobody has measured
    assert len({a["kernel"] for a in attempts}) == len(attempts)
    assert all(a["reward"] is None for a in attempts if a["status"] == "not_run")

    rows = [json.loads(line) for line in (run_dir / "trajectory.jsonl").read_text().splitlines()]
    calls = [r for r in rows if r["type"] == "call"]
    first = calls[0]
    assert first["kernel"] is None and first["feedback"].startswith("no new answer: this kernel is baseline again")
    assert calls[1]["kernel"] == "llm1" and calls[1]["temperature"] is not None  # re-asked, sampling wider
    assert "no new answer" in calls[1]["messages"][-1]["content"]
    repair = next(c for c in calls if c["round"] == 1)
    assert repair["kernel"] == "llm3" and "mx" in repair["messages"][-1]["content"]
    # the same answer sent again is refused, word for word or as the same kernel
    assert all(c["kernel"] is None and c["feedback"].startswith("no new answer") for c in calls[4:])
    # no prompt went out twice
    prompts = [json.dumps(c["messages"]) for c in calls]
    assert len(set(prompts)) == len(prompts) == len(requests)
    # later prompts list the earlier answers and what became of them
    later = calls[-1]["messages"][1]["content"]
    assert "llm1 (planner): compiled; not run yet" in later and "llm2 (planner): compile_error" in later
    assert "llm3 (planner, repair 1): compiled" in later and "answers not used: no new answer" in later

    report = (run_dir / "report.md").read_text()
    assert "**Compiled only**" in report and "kagent measure" in report
