"""The reduction skeletons (full_reduce, axis_reduce, row_scan): every fixture and example fill of
theirs instantiates into its task, its launches resolve at every size of the task, and a sample of
knob combinations that takes every value of every knob compiles with NVRTC (one compile_many call)."""

from __future__ import annotations

import importlib.util
import itertools

import pytest

from kernel_agent.skeletons import LIBRARY, instantiate, library, named_skeleton, parse_fills
from kernel_agent.task import load_task
from sandbox import compile_many, parse_directives
from sandbox.compiler import CompileJob
from sandbox.expr import evaluate_int
from tests.paths import ROOT

HAS_NVRTC = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
PORTS = ROOT / "tests" / "data" / "ports"
EXAMPLES = LIBRARY / "examples"
SKELETONS = ("full_reduce", "axis_reduce", "row_scan")


def fills():
    """(fill file, task file) for every fixture and example fill of these skeletons."""
    out = []
    for folder in (PORTS, EXAMPLES):
        for path in sorted(folder.glob("*.md")):
            if named_skeleton(path.read_text()) in SKELETONS:
                out.append((path, next((ROOT / "tasks").glob(f"*/{path.stem}.yaml"))))
    return out


def instance(fill, task_file):
    text = fill.read_text()
    skeleton = library()[named_skeleton(text)]
    task = load_task(task_file)
    return task, instantiate(skeleton, task, parse_fills(text, skeleton).values).source


def sample(knobs) -> list[dict[str, str]]:
    """The defaults, then combinations that rotate through every value of every knob (value i of
    each knob in combination i, so values of different knobs meet in several pairings)."""
    names = list(knobs)
    longest = max((len(k.values) for k in knobs.values()), default=0)
    combos = [{n: knobs[n].values[0] for n in names}]
    for shift, i in itertools.product(range(2), range(longest)):
        combos.append({n: knobs[n].values[(i + shift * j) % len(knobs[n].values)] for j, n in enumerate(names)})
    unique = []
    for c in combos:
        if c not in unique:
            unique.append(c)
    return unique


def test_every_skeleton_has_a_fill():
    named = {named_skeleton(f.read_text()) for f, _ in fills()}
    assert {s for s in SKELETONS if s in library()} <= named


@pytest.mark.parametrize("fill, task_file", fills(), ids=lambda p: p.stem)
def test_launches_resolve_at_every_size_and_knob_value(fill, task_file):
    task, source = instance(fill, task_file)
    directives = parse_directives(source)
    for dims in task.sizes:
        for knobs in sample(directives.knobs):
            env = {**dims, **{k: int(v) for k, v in knobs.items()}}
            for entry in directives.entries:
                assert all(evaluate_int(e, env) >= 1 for e in entry.grid + entry.block), (entry.name, dims, knobs)
            for scratch in directives.scratch.values():
                assert evaluate_int(scratch.count, env) >= 1, (scratch.name, dims, knobs)


@pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-bindings)")
def test_a_sample_of_knob_combinations_of_every_fill_compiles():
    jobs, labels = [], []
    for fill, task_file in fills():
        _, source = instance(fill, task_file)
        directives = parse_directives(source)
        entries = [e.name for e in directives.entries]
        for knobs in sample(directives.knobs):
            jobs.append(CompileJob(source, entries, knobs, arch="sm_90"))
            labels.append(f"{fill.stem} {knobs}")
    results = compile_many(jobs)
    failed = [(label, r.log) for label, r in zip(labels, results) if not r.ok]
    assert not failed, failed[0]


@pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-bindings)")
def test_a_task_parameter_named_like_a_slot_argument_is_shadowed_in_that_slot():
    """matvec's matrix is `a`, and row_scan's COMBINE takes `(PARAMS, float a, float b)`: the slot's own
    argument wins there, as a local would, instead of `a` declared twice (a compile error whatever the
    model wrote: both of the local model's row_scan answers on matvec failed so in its fifth round)."""
    from kernel_agent.skeletons.instance import SHADOWED

    task = load_task(ROOT / "tasks" / "naive" / "matvec.yaml")
    fills = {"ROWS": "M", "COLS": "K", "IN": "a", "OUT": "y", "IDENTITY": "0.f", "LOAD": "return v;",
             "COMBINE": "return a + b;"}
    source = instantiate(library()["row_scan"], task, fills).source
    combine = next(line for line in source.splitlines() if "kagent_combine(" in line and "{" in line)
    assert f"{SHADOWED}a" in combine and combine.endswith("float a, float b) {")
    load = next(line for line in source.splitlines() if "kagent_load(" in line and "{" in line)
    assert SHADOWED not in load and "const float* __restrict__ a," in load  # elsewhere `a` is the matrix
    directives = parse_directives(source)
    (result,) = compile_many([CompileJob(source, [e.name for e in directives.entries], {}, arch="sm_90")])
    assert result.ok, result.log
