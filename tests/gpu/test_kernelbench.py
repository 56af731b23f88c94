"""Imported KernelBench problems on a real GPU: a correct kernel passes against the PyTorch model and is
timed beside torch eager (the library baseline); a wrong one, or one that ignores a parameter, is caught;
`bench --optimize` with the fixture-served model gets each task's first kernel from the model, checks it
on the GPU and reports fast_p vs torch eager."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernel_agent.check import check
from kernel_agent.cli import app
from kernel_agent.task import load_task
from sandbox import Settings, Status
from tests.kernelbench.test_import import NAIVE_TANH
from tests.llm.routing_server import RoutingOpenAI
from tests.llm.test_optimize_llm import config_file
from tests.paths import ROOT

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

LAYERNORM = """// @kagent entry: layernorm_rows
// @kagent grid: batch_size * seq_len
// @kagent block: 1
extern "C" __global__ void layernorm_rows(const float* x, const float* p_ln_weight, const float* p_ln_bias,
                                          float* out, int batch_size, int seq_len, int hidden) {
    long long row = blockIdx.x;
    const float* xr = x + row * hidden;
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < hidden; ++i) mean += xr[i];
    mean /= hidden;
    for (int i = 0; i < hidden; ++i) { double d = xr[i] - mean; var += d * d; }
    var /= hidden;
    float inv = rsqrtf((float)var + 1e-5f);
    for (int i = 0; i < hidden; ++i)
        out[row * hidden + i] = ((float)(xr[i] - mean) * inv) WEIGHT;
}
"""
AFFINE = LAYERNORM.replace("WEIGHT", "* p_ln_weight[i] + p_ln_bias[i]")
NO_AFFINE = LAYERNORM.replace("WEIGHT", "")  # right for the default weights (ones, zeros) only


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    for name in ("01_Scaled_tanh.py", "11_LayerNorm_affine.py"):
        result = CliRunner().invoke(app, ["import", "kernelbench", str(ROOT / "tests/data/kernelbench" / name),
                                          "--out", str(out)])
        assert result.exit_code == 0, result.output
    return out


def test_a_correct_kernel_passes_against_the_model_and_is_timed_beside_torch_eager(imported, worker, tmp_path):
    kernel = tmp_path / "tanh.cu"
    kernel.write_text(NAIVE_TANH)
    outcome = check(load_task(imported / "kb_01_scaled_tanh.yaml"), kernel, worker=worker,
                    settings=Settings(budget_ms=100))
    print(f"\nKB tanh: {outcome.status.value}, {outcome.timing and outcome.timing.median_ms} ms, torch eager "
          f"{outcome.library_timing and outcome.library_timing.median_ms} ms, {outcome.library_speedup}x")
    assert outcome.status is Status.ok, outcome.message
    assert outcome.library_timing is not None and outcome.library_speedup is not None
    assert outcome.baseline_timing is None  # no starting kernel: nothing but the library beside it


def test_parameters_are_inputs_so_ignoring_one_fails(imported, worker, tmp_path):
    task = load_task(imported / "kb_11_layernorm_affine.yaml")
    good, bad = tmp_path / "good.cu", tmp_path / "bad.cu"
    good.write_text(AFFINE)
    bad.write_text(NO_AFFINE)
    assert check(task, good, worker=worker, settings=Settings(budget_ms=50)).status is Status.ok
    caught = check(task, bad, worker=worker, settings=Settings(budget_ms=50))
    assert caught.status is Status.wrong_result, caught.message


def test_bench_with_the_fixture_served_model_on_the_gpu(imported, tmp_path):
    config = config_file(tmp_path, timeout_s=30.0, max_attempts=1)
    fixtures = {"kb_01_scaled_tanh": NAIVE_TANH, "kb_11_layernorm_affine": AFFINE}
    with RoutingOpenAI(fixtures) as server:
        result = CliRunner().invoke(app, ["bench", str(imported), "--optimize", "--budget", "3", "--out",
                                          str(tmp_path / "bench"), "--llm", "fixture", "--llm-base-url",
                                          server.base_url, "--budget-ms", "50"],
                                    env={"KAGENT_CONFIG": str(config), "OPENAI_API_KEY": ""})
    assert result.exit_code == 0, result.output
    (report,) = (tmp_path / "bench").glob("*/results.json")
    doc = json.loads(report.read_text())
    print("\nKB bench:", json.dumps(doc["metrics"]["fast_library"]), doc["metrics"]["correctness"])
    assert doc["metrics"]["correctness"] == 1.0 and doc["metrics"]["library_tasks"] == 2
