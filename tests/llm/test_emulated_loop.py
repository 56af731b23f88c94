"""The LLM loop on a machine without a GPU, with the CPU emulator (`--emulate`): a model kernel that builds
but computes the wrong thing is found wrong on the CPU, its repair prompt carries the first wrong elements,
and the repaired kernel is correct on the emulator (still `not_run`: nothing was timed)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from sandbox import emulator_unavailable
from tests.llm.fake_server import FakeOpenAI, answer
from tests.llm.test_compile_only_loop import WARP_PER_ROW, no_gpu, task_without_recording  # noqa: F401
from tests.llm.test_optimize_llm import config_file

pytestmark = pytest.mark.skipif(emulator_unavailable() is not None, reason=str(emulator_unavailable()))

WRONG = WARP_PER_ROW.replace("yr[c] = expf(xr[c] - m) / s;", "yr[c] = expf(xr[c] - m) / (s + 1.f);")


def test_a_wrong_kernel_is_found_on_the_cpu_and_repaired_with_its_evidence(tmp_path, no_gpu):  # noqa: F811
    assert WRONG != WARP_PER_ROW
    script = [
        answer(f"One warp per row:\n```cuda\n{WRONG}```"),  # builds; wrong on every size
        answer(f"The sum was off by one:\n```cuda\n{WARP_PER_ROW}```"),  # the repair
        answer(f"```cuda\n{WARP_PER_ROW}```"),  # the same again: refused
    ]
    config = config_file(tmp_path, timeout_s=5.0, max_attempts=1)
    with FakeOpenAI(script) as server:
        result = CliRunner().invoke(app, [
            "optimize", str(task_without_recording(tmp_path)), "--out", str(tmp_path / "out"), "--budget", "4",
            "--emulate", "--llm", "test-model", "--llm-base-url", server.base_url,
            "--no-warm-start", "--no-llm-port"],
            env={"KAGENT_CONFIG": str(config), "OPENAI_API_KEY": ""})
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out" / "softmax_unrecorded").iterdir()
    config = json.loads((run_dir / "run.json").read_text())
    assert config["emulate"] is True and config["executor"] == "compile-only"  # --emulate under --executor auto

    attempts = {a["kernel"]: a for a in map(json.loads, (run_dir / "attempts.jsonl").read_text().splitlines())}
    assert attempts["baseline"]["status"] == "not_run"
    assert attempts["baseline"]["outcome"]["message"].startswith("correct at")
    wrong = attempts["llm1"]["outcome"]
    assert attempts["llm1"]["status"] == "wrong_result" and "(CPU emulator)" in wrong["message"]
    assert wrong["mismatch"]["first_bad"], wrong
    assert attempts["llm2"]["status"] == "not_run" and "correct at" in attempts["llm2"]["outcome"]["message"]

    calls = [r for r in map(json.loads, (run_dir / "trajectory.jsonl").read_text().splitlines())
             if r["type"] == "call"]
    repair = next(c for c in calls if c["round"] == 1)
    prompt = repair["messages"][-1]["content"]
    mismatch = wrong["mismatch"]
    assert repair["kernel"] == "llm2" and "first wrong" in prompt and mismatch["size"] in prompt
    shown = [f"{bad['expected']:.6g}, {bad['got']:.6g}" for bad in mismatch["first_bad"]] \
        if len(mismatch["first_bad"]) > 1 else [f"expected {mismatch['expected']}, got {mismatch['got']}"]
    assert all(text in prompt for text in shown), prompt
    assert "**Compiled and emulated**" in (run_dir / "report.md").read_text()
