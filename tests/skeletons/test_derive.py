"""kagent fills the structure slots the task's shapes decide, and only those: checked against every
hand-written fill (fixtures and examples), and on shapes that leave more than one reading."""

from __future__ import annotations

import re

import pytest

from kernel_agent.skeletons import instantiate, library, named_skeleton, parse_fills, suite_task
from kernel_agent.skeletons.derive import derive, plan
from kernel_agent.task import Task, load_task
from kernel_agent.task_fields import Input, Output
from sandbox import evaluate
from tests.paths import ROOT

FIXTURES = sorted((ROOT / "tests" / "data" / "ports").glob("*.md"))
EXAMPLES = sorted((ROOT / "kernel_agent" / "skeletons" / "examples").glob("*.md"))


def _task_of(path) -> Task:
    if path.parent.name == "examples":
        task = suite_task(path.stem)
        assert task is not None
        return task
    return load_task(ROOT / "tasks" / "naive" / f"{path.stem}.yaml")


def _code(text: str) -> str:
    return re.sub(r"[\s()]", "", text).rstrip(";")


@pytest.mark.parametrize("path", FIXTURES + EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_what_kagent_derives_agrees_with_the_hand_written_fill(path):
    text = path.read_text()
    skeleton = library()[named_skeleton(text) or ""]
    task = _task_of(path)
    hand = parse_fills(text, skeleton).values
    chosen = plan(skeleton, task)
    own = {k: v for k, v in hand.items() if k in chosen.asked}
    derived = derive(skeleton, task, own)
    for name, fill in derived.fills.items():
        slot = skeleton.slot(name)
        assert slot is not None and name in hand, f"{name} derived, but the fixture leaves it empty"
        if slot.kind == "dim":  # the same value at every size
            assert all(evaluate(fill, dims) == evaluate(hand[name], dims) for dims in task.sizes), (name, fill)
        else:
            assert _code(fill) == _code(hand[name]), (name, fill, hand[name])
    assert not any(hand.get(name, "").strip() for name in derived.unused), "a slot the fixture needs is unused"
    assert all(hand.get(name, "").strip() for name in chosen.needed)
    # the model's share of the fixture, plus kagent's, assembles
    instantiate(skeleton, task, {**own, **derived.fills})


def test_the_model_is_asked_for_the_math_only_where_the_shapes_decide_the_rest():
    asked = {p.stem: plan(library()[named_skeleton(p.read_text()) or ""], _task_of(p)).asked for p in FIXTURES}
    assert asked["softplus"] == ["VALUE"]
    assert asked["bmm"] == asked["matmul_scale_residual"] == ["EPILOGUE"]
    assert asked["argmin_dim"] == asked["mean_dim"] == ["IDENTITY", "COMBINE", "FINALIZE"]
    assert asked["kl_div_loss"] == ["TERM", "RESULT"] and asked["frobenius_norm"] == ["TERM", "MAP"]
    assert asked["masked_cumsum"] == ["IDENTITY", "LOAD", "COMBINE"]
    assert asked["matvec"] == ["PRE", "STATE", "ADD", "MERGE", "FINAL", "FINISH"]
    # a rank-5 group norm: which axes form a row is the model's to say; the row pointers follow from COLS
    chosen = plan(library()["rowwise"], _task_of(FIXTURES[[p.stem for p in FIXTURES].index("group_norm")]))
    assert chosen.asked[:2] == ["ROWS", "COLS"] and chosen.after == {"IN_ROW": "x + row * COLS",
                                                                      "OUT_ROW": "y + row * COLS"}
    assert chosen.unused == {"FINISH"} and chosen.needed == {"MAP"}


def _with(task: Task, inputs: dict[str, list], outputs: dict[str, list], dtype: str = "float32") -> Task:
    """`task` with other tensors (derivation reads only names, shapes, dtypes and the parameter order)."""
    ins = {n: Input(shape=s, dtype=dtype) for n, s in inputs.items()}
    outs = {n: Output(shape=s, dtype="float32") for n, s in outputs.items()}
    return task.model_copy(update={"inputs": ins, "outputs": outs, "params": [*ins, *outs, *task.dims]})


def test_shapes_with_more_than_one_reading_derive_nothing():
    base = load_task(ROOT / "tasks" / "naive" / "argmin_dim.yaml")
    axis = library()["axis_reduce"]
    # x (B, N, N) -> (B, N): the reduced axis could be either N
    assert set(derive(axis, _with(base, {"x": ["B", "N", "N"]}, {"y": ["B", "N"]})).fills) == {"IN"}
    # x (B, N, D) -> (B, D): the middle one
    fills = derive(axis, _with(base, {"x": ["B", "N", "D"]}, {"y": ["B", "D"]})).fills
    assert fills == {"OUTER": "B", "R": "N", "INNER": "D", "IN": "x"}
    # keepdim: (B, 1, D)
    assert derive(axis, _with(base, {"x": ["B", "N", "D"]}, {"y": ["B", 1, "D"]})).fills["R"] == "N"
    matmul = library()["matmul"]
    # a square product whose operands share one dim name: which axis of a is summed is not decided
    assert derive(matmul, _with(base, {"a": ["N", "N"], "b": ["N", "N"]}, {"c": ["N", "N"]})).fills == {}
    # b stored transposed (N, K): read as such
    fills = derive(matmul, _with(base, {"a": ["B", "N", "D"], "b": ["D", "D"]}, {"c": ["B", "N", "D"]})).fills
    assert fills == {}  # K and N are both D: ambiguous
    dims_task = base.model_copy(update={"dims": {"M": 3, "N": 5, "K": 7}})
    fills = derive(matmul, _with(dims_task, {"a": ["M", "K"], "b": ["N", "K"]}, {"c": ["M", "N"]})).fills
    assert fills["LOAD_A"] == "return a[row * K + kk];" and fills["LOAD_B"] == "return b[col * K + kk];"
    assert fills["BATCH"] == "1"
    transpose = library()["transpose"]
    fills = derive(transpose, _with(base, {"x": ["B", "N", "D"]}, {"y": ["B", "D", "N"]})).fills
    assert (fills["BATCH"], fills["ROWS"], fills["COLS"]) == ("B", "N", "D")
    fills = derive(transpose, _with(base, {"x": ["B", "N", "D"]}, {"y": ["D", "B", "N"]})).fills
    assert (fills["BATCH"], fills["ROWS"], fills["COLS"]) == ("1", "B * N", "D")


def test_a_fill_given_is_never_replaced():
    task = load_task(ROOT / "tasks" / "naive" / "softplus.yaml")
    elementwise = library()["elementwise"]
    assert "OUT" not in derive(elementwise, task, {"OUT": "y"}).fills
    assert derive(elementwise, task, {"OUT": "y"}).fills == {"N": "n"}
