"""Ported kernels measured fast are kept, fastest first, and shown as the example of later ports."""

from __future__ import annotations

from kernel_agent.llm.porting import example_fill
from kernel_agent.skeletons import library, parse_fills, port
from kernel_agent.skeletons.winners import keep_winner, read_winner
from kernel_agent.task import load_task
from tests.paths import ROOT

NAIVE = ROOT / "tasks" / "naive"
PORTS = ROOT / "tests" / "data" / "ports"


def test_the_fastest_fills_of_a_task_are_kept_and_read_back(tmp_path):
    axis = library()["axis_reduce"]
    argmin = load_task(NAIVE / "argmin_dim.yaml")
    fills = parse_fills((PORTS / "argmin_dim.md").read_text(), axis).values
    assert keep_winner(tmp_path, argmin, axis, fills, 3.5, "run-a")
    assert not keep_winner(tmp_path, argmin, axis, {**fills, "COMBINE": "return acc;"}, 2.0, "run-b")  # slower
    won = read_winner(tmp_path / "argmin_dim.md", axis)
    assert won is not None and won.speedup == 3.5 and won.fills == fills and won.family == "reduction"
    assert read_winner(tmp_path / "argmin_dim.md", library()["rowwise"]) is None  # another skeleton's
    # the file is a fill file `kagent port --fills` takes
    assert "kagent_axis_reduce" in port(argmin, (tmp_path / "argmin_dim.md").read_text()).source
    assert keep_winner(tmp_path, argmin, axis, fills, 4.0, "run-c")  # a faster one replaces it


def test_a_later_port_of_the_same_skeleton_shows_the_winner_as_its_example(tmp_path):
    axis = library()["axis_reduce"]
    argmin, mean = load_task(NAIVE / "argmin_dim.yaml"), load_task(NAIVE / "mean_dim.yaml")
    assert example_fill(axis, mean) is None  # the library has no re-expressed variant of axis_reduce
    keep_winner(tmp_path, argmin, axis, parse_fills((PORTS / "argmin_dim.md").read_text(), axis).values, 3.5, "r")
    example = example_fill(axis, mean, winners=tmp_path)
    assert example is not None and example["task"] == "argmin_dim" and "measured 3.50x" in example["description"]
    assert "```COMBINE\nreturn fminf(acc, v);\n```" in example["fills"] and "```OUTER" not in example["fills"]
    assert example_fill(axis, argmin, winners=tmp_path) is None  # never a task's own fills
