"""The window and transpose skeletons (window2d, window1d, transpose): every fixture and example fill
instantiates into its task, and compiles with NVRTC at a sample of knob combinations that holds
every value of every knob (one compile_many call)."""

from __future__ import annotations

import importlib.util
import re

import pytest

from kernel_agent.skeletons import LIBRARY, instantiate, library, parse_fills
from kernel_agent.task import load_task
from sandbox import parse_directives
from sandbox.compiler import CompileJob, compile_many
from tests.paths import ROOT

HAS_NVRTC = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
SKELETONS = ("window2d", "window1d", "transpose")
PORTS = ROOT / "tests" / "data" / "ports"
FILLS = [p for p in sorted(PORTS.glob("*.md")) + sorted((LIBRARY / "examples").glob("*.md"))
         if re.match(r"skeleton:\s*(\w+)", p.read_text()).group(1) in SKELETONS]


def instance_of(path):
    text = path.read_text()
    name = re.match(r"skeleton:\s*(\w+)", text).group(1)
    task = load_task(next((ROOT / "tasks").glob(f"*/{path.stem}.yaml")))
    skeleton = library()[name]
    return task, instantiate(skeleton, task, parse_fills(text, skeleton).values)


def sample(knobs: dict[str, list[str]]) -> list[dict[str, str]]:
    """The defaults, each other value of each knob alone, and every knob at its last value together."""
    default = {name: values[0] for name, values in knobs.items()}
    combos = [default, {name: values[-1] for name, values in knobs.items()}]
    for name, values in knobs.items():
        combos += [{**default, name: value} for value in values[1:]]
    unique = {tuple(sorted(c.items())): c for c in combos}
    return list(unique.values())


def test_the_skeletons_are_in_the_library():
    assert set(SKELETONS) <= set(library())


@pytest.mark.parametrize("path", FILLS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_fill_instantiates_with_the_tasks_signature(path):
    task, instance = instance_of(path)
    signature = ", ".join(task.c_parameters(restrict=True))
    assert f"({signature})" in instance.source
    assert "{{" not in instance.source


@pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-bindings)")
def test_every_fill_compiles_at_a_sample_of_knob_combinations_holding_every_value():
    jobs, names = [], []
    for path in FILLS:
        _, instance = instance_of(path)
        directives = parse_directives(instance.source)
        entries = [e.name for e in directives.entries]
        knobs = {k.name: list(k.values) for k in directives.knobs.values()}
        for combo in sample(knobs):
            jobs.append(CompileJob(instance.source, entries, combo, [], "sm_90"))
            names.append(f"{path.stem} {combo}")
    results = compile_many(jobs)
    failed = [(name, r.log) for name, r in zip(names, results) if not r.ok]
    assert not failed, failed[0]


def test_the_sample_holds_every_value():
    knobs = {"A": ["1", "2", "3"], "B": ["x", "y"]}
    combos = sample(knobs)
    for name, values in knobs.items():
        assert {c[name] for c in combos} == set(values)
    assert len(combos) == len({tuple(sorted(c.items())) for c in combos})
