"""`kagent import kernelbench` on KernelBench-format problems written here (tests/data/kernelbench):
each imports and validates, or is rejected with its reason, as its `# kagent-expect:` line says; the
tasks' shapes, sizes, value sets and references are what the PyTorch model means."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.task import load_task
from sandbox.inputs import load_function
from tests.paths import ROOT

torch = pytest.importorskip("torch")

PROBLEMS = ROOT / "tests" / "data" / "kernelbench"
NAIVE_TANH = """// @kagent entry: scaled_tanh
// @kagent grid: ceil_div(batch_size * dim, 256)
// @kagent block: 256
extern "C" __global__ void scaled_tanh(const float* x, float* out, int batch_size, int dim) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long)batch_size * dim) out[i] = 1.7159f * tanhf(x[i] * (2.f / 3.f));
}
"""


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    result = CliRunner().invoke(app, ["import", "kernelbench", str(PROBLEMS), "--out", str(out)])
    return out, result


def expectation(path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# kagent-expect: ")
    return first.removeprefix("# kagent-expect: ")


def test_each_problem_imports_and_validates_or_is_rejected_for_its_reason(imported):
    out, result = imported
    report = {row["problem"].rsplit("/", 1)[-1]: row for row in json.loads((out / "import.json").read_text())}
    files = sorted(PROBLEMS.glob("*.py"))
    assert len(report) == len(files) >= 12
    for file in files:
        row, expected = report[file.name], expectation(file)
        if expected == "import":
            assert row["status"] == "imported", (file.name, row["reason"])
        else:
            assert row["status"] == "rejected" and row["task"] is None, file.name
    assert "a random op in its forward" in report["13_Dropout_in_forward.py"]["reason"]
    assert "shape depends on the data" in report["14_Select_positive.py"]["reason"]
    assert result.exit_code == 1 and "13 of 15 imported and valid; 2 rejected" in result.output


def test_shapes_are_named_by_the_size_constants_even_where_two_share_a_value(imported):
    out, _ = imported
    mean = load_task(out / "kb_12_mean_last_dim.yaml")  # seq_len == hidden == 1024 at the timed size
    assert mean.inputs["x"].shape == ["batch_size", "seq_len", "hidden"]
    assert mean.outputs["out"].shape == ["batch_size", "seq_len"]
    assert mean.dims == {"batch_size": 32, "seq_len": 1024, "hidden": 1024}
    assert all(all(v % 2 == 1 or v == mean.dims[k] for k, v in size.items()) for size in mean.check_sizes)
    pool = load_task(out / "kb_08_maxpool2d.yaml")
    assert pool.derived == {"out_d2": "(height - 1) // 2 + 1", "out_d3": "(width - 1) // 2 + 1"}
    assert pool.outputs["out"].shape == ["batch_size", "channels", "out_d2", "out_d3"]


def test_parameters_scalars_value_sets_and_int_outputs(imported):
    out, _ = imported
    linear = load_task(out / "kb_03_linear_relu.yaml")
    assert list(linear.inputs) == ["x", "p_fc_weight", "p_fc_bias"]
    assert linear.inputs["p_fc_weight"].shape == ["out_features", "in_features"]
    hinge = load_task(out / "kb_07_hinge_loss.yaml")
    assert hinge.inputs["targets"].init.kind == "choice" and hinge.inputs["targets"].init.values == [-1.0, 1.0]
    assert hinge.outputs["out"].shape == []
    leaky = load_task(out / "kb_05_leaky_with_scalar_alpha.yaml")
    assert leaky.scalars["alpha"].value == 0.5 and "alpha" in leaky.params
    labels = load_task(out / "kb_15_class_index_loss.yaml").inputs["labels"]
    assert labels.dtype == "int64" and (labels.init.kind, labels.init.low, labels.init.high) == \
        ("randint", 0, "num_classes")  # the bound follows the size: valid indices at every check size
    argmax = load_task(out / "kb_02_argmax_over_dim1.yaml")
    assert argmax.outputs["out"].dtype == "int64" and argmax.outputs["out"].compare_exactly
    norm = load_task(out / "kb_11_layernorm_affine.yaml")  # unit weights are spread: ignoring them must fail
    assert norm.inputs["p_ln_weight"].init.kind == "uniform" and norm.inputs["p_ln_weight"].init.low == 0.5
    assert "class Model" in norm.reference_source() and norm.baseline is None


def test_the_reference_is_the_model_with_the_tasks_parameters(imported):
    out, _ = imported
    task = load_task(out / "kb_03_linear_relu.yaml")
    reference = load_function(task.function_spec(task.reference))
    rng = np.random.default_rng(0)
    x, w, b = (rng.normal(size=s).astype(np.float32) for s in [(5, 7), (2048, 7), (2048,)])
    got = reference(x=x, p_fc_weight=w, p_fc_bias=b, batch_size=5, in_features=7, out_features=2048)
    assert np.allclose(got, np.maximum(x @ w.T + b, 0), atol=1e-5)


def test_a_task_without_a_starting_kernel_checks_a_given_one(imported, tmp_path):
    out, _ = imported
    task_file = out / "kb_01_scaled_tanh.yaml"
    alone = CliRunner().invoke(app, ["check", str(task_file), "--compile-only"])
    assert alone.exit_code == 2 and "has no starting kernel" in alone.output
    kernel = tmp_path / "naive.cu"
    kernel.write_text(NAIVE_TANH)
    given = CliRunner().invoke(app, ["check", str(task_file), str(kernel), "--compile-only"])
    assert given.exit_code == 0, given.output
