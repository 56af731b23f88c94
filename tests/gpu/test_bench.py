"""`kagent bench --kernels` on the GPUs of this machine: a correct, a wrong, a non-compiling and a
hanging kernel, and a missing one; the hang costs only its own task."""

import json

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from sandbox import gpu_count
from tests.kernel_agent.test_bench import LEVEL1, MIXED, bench_dir, ready_made

pytestmark = pytest.mark.gpu


def test_ready_made_kernels_on_the_gpus(tmp_path):
    args = ["bench", *[str(LEVEL1 / f"{n}.yaml") for n in MIXED], "--kernels", str(ready_made(tmp_path / "kernels")),
            "--out", str(tmp_path), "--budget-ms", "50"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads((bench_dir(tmp_path) / "results.json").read_text())
    tasks = {t["task"]: t for t in doc["tasks"]}
    assert {n: t["status"] for n, t in tasks.items()} == {
        "add": "ok", "gelu": "wrong_result", "softmax": "compile_error", "row_sum": "timeout",
        "transpose": "not_run"}
    add = tasks["add"]
    assert not add["replayed"] and add["speedup"] > 1.0 and add["library_ms"] > 0 and 0 < add["roofline_fraction"] < 1.1
    m = doc["metrics"]
    assert m["correctness"] == 0.2 and m["failures"] == {
        "compile_error": 1, "timeout": 1, "wrong_result": 1, "not_run": 1}
    assert doc["environment"]["name"].startswith("NVIDIA")
    if gpu_count() > 1:  # the hang kept one GPU busy; the other took the rest
        assert len({t["gpu"] for t in doc["tasks"] if t["status"] != "not_run"}) > 1
