"""The naive-only suite, tasks/naive/: KernelBench level 1 and 2 operators that level1/ and level2/ lack,
each with a reference, a torch function and only a naive baseline. Quick: the tasks load and their
kernels compile (`kagent check --compile-only`); the reference probe at every size is the slow
tests/kernel_agent/test_suite.py, which validates every task under tasks/."""

import json
import re

import pytest
from typer.testing import CliRunner

from kernel_agent.cli import app
from kernel_agent.task import discover, load_task
from tests.paths import ROOT

NAIVE = ROOT / "tasks" / "naive"
TASK_FILES = discover(NAIVE)
TASKS = {path.stem: load_task(path) for path in TASK_FILES}
OTHER_SUITES = {load_task(p).name for folder in ("level1", "level2") for p in discover(ROOT / "tasks" / folder)}
SOURCE = re.compile(r"^# From KernelBench level[12]/\d+_\w+\.py$")

# The patterns issue 15 asks for, by the task that has each.
REQUIRED = {
    "mean_dim": "reduction over a middle axis",
    "bmm": "3-D batched matrix multiplication",
    "masked_cumsum": "cumulative sum with a mask",
    "kl_div_loss": "scalar-valued loss",
    "argmin_dim": "argmin over a dim, int64 output",
    "avgpool2d": "pooling window",
    "maxpool1d": "pooling window (dilated, overlapping)",
}


def test_at_least_twelve_new_tasks_each_named_after_its_file():
    assert len(TASKS) >= 12
    assert all(task.name == stem for stem, task in TASKS.items())
    assert not set(TASKS) & OTHER_SUITES, "a naive task duplicates a level1/level2 task"


@pytest.mark.parametrize("stem", sorted(TASKS))
def test_only_a_naive_baseline_and_a_cited_source(stem):
    task = TASKS[stem]
    assert task.variants == {}
    assert task.library, "torch eager is timed alongside"
    assert task.family and task.cost.bytes
    kernel = task.baseline_kernel()
    assert set(kernel.directives.knobs) <= {"BLOCK"}
    first_line = (NAIVE / f"{stem}.yaml").read_text().splitlines()[0]
    assert SOURCE.match(first_line), first_line


def test_the_required_patterns_are_there():
    assert set(REQUIRED) <= set(TASKS)
    mean = TASKS["mean_dim"]
    assert mean.inputs["x"].shape == ["B", "N", "D"] and mean.outputs["y"].shape == ["B", "D"]
    assert len(TASKS["bmm"].inputs["a"].shape) == 3 and len(TASKS["bmm"].outputs["c"].shape) == 3
    assert TASKS["masked_cumsum"].inputs["mask"].dtype == "bool"
    loss = TASKS["kl_div_loss"].outputs["loss"]
    assert loss.shape == [] and loss.accumulate
    idx = TASKS["argmin_dim"].outputs["idx"]
    assert idx.dtype == "int64" and idx.compare_exactly
    assert {"avgpool2d", "maxpool1d"} <= {n for n, t in TASKS.items() if t.family == "pooling"}


def test_check_sizes_are_odd_and_not_warp_multiples():
    """Every dim is odd at some check size, and no check size is all multiples of 32."""
    for stem, task in TASKS.items():
        for dim in task.dims:
            assert any(dims[dim] % 2 for dims in task.check_sizes), f"{stem}: {dim} is never odd"
        assert not any(all(v % 32 == 0 for v in dims.values()) for dims in task.check_sizes), stem


@pytest.mark.parametrize("path", TASK_FILES, ids=[p.stem for p in TASK_FILES])
def test_the_baseline_compiles(path):
    result = CliRunner().invoke(app, ["check", str(path), "--compile-only", "--json"])
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.output)
    assert outcome["status"] == "ok" and outcome["resources"][0]["registers"] > 0
