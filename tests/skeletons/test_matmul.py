"""The matmul skeletons. matmul (fp32 SIMT): its fixtures (bmm, conv1d as an implicit GEMM, a linear
layer with a fused epilogue) and its example (matmul_fp32, the twin of tasks/level1/matmul_fp32/tiled.cu);
matmul_tc (fp16 tensor cores): its example (matmul_fp16, the twin of tasks/level1/matmul_fp16/wmma.cu).
Each compiles at a covering sample of knob combinations and launches sanely at every size of its task."""

from __future__ import annotations

import importlib.util
import itertools
import re

import pytest

from kernel_agent.skeletons import LIBRARY, instantiate, library, parse_fills
from kernel_agent.task import load_task
from sandbox import compile_many, evaluate, parse_directives
from tests.paths import ROOT

HAS_NVRTC = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
PORTS, TASKS = ROOT / "tests" / "data" / "ports", ROOT / "tasks"
FILLS = {  # fill file -> task file
    PORTS / "bmm.md": TASKS / "naive" / "bmm.yaml",
    PORTS / "conv1d.md": TASKS / "naive" / "conv1d.yaml",
    PORTS / "matmul_scale_residual.md": TASKS / "naive" / "matmul_scale_residual.yaml",
    LIBRARY / "examples" / "matmul_fp32.md": TASKS / "level1" / "matmul_fp32.yaml",
    LIBRARY / "examples" / "matmul_fp16.md": TASKS / "level1" / "matmul_fp16.yaml",
}


def instance(fill):
    text = fill.read_text()
    name = re.match(r"skeleton:\s*(matmul|matmul_tc)\s", text).group(1)
    skeleton = library()[name]
    task = load_task(FILLS[fill])
    return task, instantiate(skeleton, task, parse_fills(text, skeleton).values).source


def covering(knobs) -> list[dict[str, str]]:
    """The defaults, every knob at its last value, and two alternating mixes: each value of each
    knob appears, and each pair of neighbouring knobs is seen both equal and crossed."""
    names = list(knobs)
    last = {n: knobs[n].values[-1] for n in names}
    first = {n: knobs[n].default for n in names}
    mixes = [{n: (first, last)[(i + shift) % 2][n] for i, n in enumerate(names)} for shift in (0, 1)]
    return [first, last, *mixes]


def test_the_example_keeps_the_twins_knobs():
    """A side-by-side sweep with tiled.cu: BM, BN, BK, UNROLL mean the same; THREAD_TILE is TM = TN."""
    _, source = instance(LIBRARY / "examples" / "matmul_fp32.md")
    mine = parse_directives(source).knobs
    twin = parse_directives((ROOT / "tasks" / "level1" / "matmul_fp32" / "tiled.cu").read_text()).knobs
    for name in ("BM", "BN", "BK", "UNROLL"):
        assert mine[name].values == twin[name].values, name
    assert mine["TM"].values == mine["TN"].values == twin["THREAD_TILE"].values


def test_the_tensor_core_example_keeps_the_twins_knobs():
    """A side-by-side sweep with wmma.cu: every knob of the twin, same values; B_KMAJOR is new (B's
    staged direction), its default (0) the twin's row-major B."""
    _, source = instance(LIBRARY / "examples" / "matmul_fp16.md")
    mine = parse_directives(source).knobs
    twin = parse_directives((ROOT / "tasks" / "level1" / "matmul_fp16" / "wmma.cu").read_text()).knobs
    for name, knob in twin.items():
        assert mine[name].values == knob.values, name
    assert set(mine) - set(twin) == {"B_KMAJOR"} and mine["B_KMAJOR"].default == "0"


@pytest.mark.parametrize("fill", list(FILLS), ids=lambda p: p.stem)
def test_every_launch_is_sane_at_every_size_and_knob_value(fill):
    task, source = instance(fill)
    directives = parse_directives(source)
    (entry,) = directives.entries
    names = list(directives.knobs)
    for values in itertools.product(*(directives.knobs[n].values for n in names)):
        knobs = {n: int(v) for n, v in zip(names, values)}
        for dims in task.sizes:
            scope = {**dims, **knobs}
            block = evaluate(entry.block[0], scope)
            grid = [evaluate(g, scope) for g in entry.grid]
            smem = evaluate(entry.smem, scope)
            assert 32 <= block <= 1024 and block % 32 == 0 and 0 <= smem <= 227 * 1024
            assert all(g >= 1 for g in grid) and grid[1] <= 65535 and grid[2] <= 65535


@pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-bindings)")
def test_every_instance_compiles_at_a_covering_sample_of_knobs_without_spills_at_the_defaults():
    """ptxas may spill a word or two at some non-default tiles (it did at BM=128 BN=64 TM=8 TN=4
    UNROLL=1 B_ALONG_K=1: 4 B); the defaults must not spill at all."""
    jobs, labels, defaults = [], [], []
    for fill in FILLS:
        _, source = instance(fill)
        directives = parse_directives(source)
        for knobs in covering(directives.knobs):
            jobs.append({"source": source, "entries": [e.name for e in directives.entries], "knobs": knobs,
                         "arch": "sm_90"})
            labels.append(f"{fill.stem} {knobs}")
            defaults.append(knobs == directives.default_knobs())
    results = compile_many(jobs)
    for label, default, result in zip(labels, defaults, results):
        assert result.ok, f"{label}: {result.log}"
        for resources in result.resources:
            spilled = resources.spill_stores + resources.spill_loads
            assert spilled == 0 if default else spilled <= 16, f"{label}: {resources}"
