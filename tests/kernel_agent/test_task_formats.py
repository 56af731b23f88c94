"""Task format additions for imported problems (issue 18): derived dims, inputs drawn from a set of
values, references (and library functions) that take the sizes."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from kernel_agent.task import TaskError, load_task
from kernel_agent.validate import validate_task
from sandbox import Buffer, Init
from sandbox.inputs import draw, run_reference

KERNEL = """// @kagent entry: hinge
// @kagent grid: ceil_div(n, 256)
// @kagent block: 256
extern "C" __global__ void hinge(const float* pred, const float* target, float* loss, int rows, int cols, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) loss[i] = fmaxf(0.f, 1.f - pred[i] * target[i]);
}
"""
REFERENCE = """import numpy as np

def hinge(pred, target, n):
    assert pred.size == n  # the reference is handed the derived dim by name
    return np.maximum(0.0, 1.0 - pred.astype(np.float64).reshape(-1) * target).reshape(pred.shape)
"""


def task_file(tmp_path, **changes):
    (tmp_path / "hinge").mkdir(exist_ok=True)
    (tmp_path / "hinge" / "naive.cu").write_text(KERNEL)
    (tmp_path / "hinge" / "reference.py").write_text(REFERENCE)
    data = {"name": "hinge", "reference": "hinge/reference.py:hinge", "dims": {"rows": 64, "cols": 96},
            "derived": {"n": "rows * cols"}, "check_sizes": [{"rows": 3, "cols": 5}, {"rows": 1, "cols": 33}],
            "inputs": {"pred": {"shape": ["rows", "cols"]},
                       "target": {"shape": ["n"], "init": {"kind": "choice", "values": [-1, 1]}}},
            "outputs": {"loss": {"shape": ["rows", "cols"], "atol": 1e-6, "rtol": 1e-6}},
            "params": ["pred", "target", "loss", "rows", "cols", "n"], "cost": {"bytes": "12 * n"},
            "baseline": "hinge/naive.cu", **changes}
    path = tmp_path / "hinge.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_derived_dims_reach_shapes_params_cost_and_the_reference(tmp_path):
    task = load_task(task_file(tmp_path))
    assert task.sizes[1] == {"rows": 3, "cols": 5, "n": 15}
    timed = task.problem().sizes[0]
    assert timed.label == "rows=64 cols=96" and timed.dims["n"] == 64 * 96 and timed.bytes_moved == 12 * 64 * 96
    assert [b.shape for b in timed.buffers] == [[64, 96], [6144], [64, 96]]
    report = validate_task(task_file(tmp_path), quick=True)  # compiles the kernel, runs the reference
    assert report.ok, report.errors


@pytest.mark.parametrize("derived, message", [
    ({"n": "rows * depth"}, "derived.n: unknown names \\['depth'\\]"),
    ({"rows": "cols"}, "derived.rows: a dim of that name exists"),
    ({"n": "rows - 64"}, "derived dim n = rows - 64 is 0, not at least 1"),  # at the timed size
    ({"n": "rows / 2"}, "derived: .*not a whole number at rows=3 cols=5"),
    ({"n": "m * 2", "m": "rows"}, "derived.n: unknown names \\['m'\\]"),  # in order: m is not known yet
])
def test_a_derived_dim_that_cannot_be_used_names_itself(tmp_path, derived, message):
    with pytest.raises(TaskError, match=message):
        load_task(task_file(tmp_path, derived=derived))


def test_derived_dims_in_order_and_their_fingerprint(tmp_path):
    task = load_task(task_file(tmp_path, derived={"m": "rows * 2", "n": "m * cols // 2"}))
    assert task.sizes[0]["n"] == 64 * 96
    plain = load_task(task_file(tmp_path, derived={"n": "cols * rows"})).fingerprint()
    assert load_task(task_file(tmp_path)).fingerprint() != plain


def test_choice_draws_only_from_its_set():
    buffer = Buffer(name="t", role="input", dtype="float32", shape=[1000],
                    init=Init(kind="choice", values=[-1.0, 1.0]))
    values = draw(buffer, np.random.default_rng(0))
    assert set(np.unique(values)) == {-1.0, 1.0}
    with pytest.raises(ValidationError, match="kind choice needs values"):
        Init(kind="choice")
    with pytest.raises(ValidationError, match="finite"):
        Init(kind="choice", values=[float("nan")])


def test_a_reference_gets_the_dims_it_names_and_no_others():
    seen = {}

    def reference(x, scale, cols):
        seen.update(cols=cols)
        return x * scale

    x = Buffer(name="x", role="input", dtype="float32", shape=[2, 3])
    out = Buffer(name="y", role="output", dtype="float32", shape=[2, 3])
    got = run_reference(reference, {"x": np.ones(6, np.float32)}, [x], {"scale": 2.0}, [out],
                        {"rows": 2, "cols": 3})
    assert seen == {"cols": 3} and got["y"].tolist() == [2.0] * 6


def test_an_init_bound_may_follow_a_dim(tmp_path):
    inputs = {"pred": {"shape": ["rows", "cols"]},
              "target": {"shape": ["n"], "dtype": "int32", "init": {"kind": "randint", "low": 0, "high": "cols"}}}
    task = load_task(task_file(tmp_path, inputs=inputs))
    inits = [next(b.init for b in case.buffers if b.name == "target") for case in task.problem().sizes]
    assert [i.high for i in inits] == [96, 5, 33]
    inputs["target"]["init"]["high"] = "classes"
    with pytest.raises(TaskError, match="inputs.target.init.high: unknown names \\['classes'\\]"):
        load_task(task_file(tmp_path, inputs=inputs))
