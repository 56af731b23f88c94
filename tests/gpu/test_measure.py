"""`kagent measure` on a real GPU: a compile-only search of the softmax task (as on a machine without a
GPU), then its kernels measured here; the journal, report and run.json completed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from sandbox import detect_arch
from tests.paths import ROOT

pytestmark = pytest.mark.gpu

SOFTMAX = ROOT / "tasks" / "level1" / "softmax.yaml"


def kagent(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("strategy", ["agent", "random"])
def test_a_compile_only_run_is_measured_on_the_gpu(tmp_path, strategy):
    out = tmp_path / "out"
    searched = kagent("optimize", SOFTMAX, "--executor", "compile-only", "--strategy", strategy, "--budget", 8,
                      "--out", out, "--no-llm")
    assert searched.exit_code == 0, searched.output
    (run_dir,) = (out / "softmax").iterdir()
    before = [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert len(before) >= 2 and {r["status"] for r in before} == {"not_run"}

    result = kagent("measure", run_dir.name, "--out", out)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "speedup vs baseline" in said and "speedup vs library" in said

    rows = [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert [r["number"] for r in rows] == [r["number"] for r in before]
    assert all(r["status"] != "not_run" for r in rows), [r["status"] for r in rows]
    assert rows[0]["status"] == "ok" and rows[0]["median_ms"] > 0
    assert any(r["kernel"] == "rowblock" and r["status"] == "ok" and r["speedup"] > 1 for r in rows)
    assert all(r["reward"] is not None for r in rows[1:])
    report = (run_dir / "report.md").read_text()
    assert "Compiled only" not in report and "Measured afterwards" in report
    assert "| library function |" in report  # the winner re-measured beside the library function
    assert "measured beside the baseline and the library function" in report
    config = json.loads((run_dir / "run.json").read_text())
    assert detect_arch() in config["measured_on"] and config["measured_at"]
    assert (run_dir / "best.cu").is_file() and (run_dir / "attempts.compile-only.jsonl").is_file()
    again = kagent("measure", run_dir.name, "--out", out)
    assert again.exit_code == 2 and "--again" in again.output
