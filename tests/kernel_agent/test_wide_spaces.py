"""The wide tuning spaces of tasks/wide: each task is a copy of a suite task (same family, sizes,
reference and baseline) whose variant declares at least 1,000 knob combinations, some of which cannot
build or launch. Here each task loads, its space is counted, and a few combinations are compiled for
sm_90 with the project's own Evaluator (no GPU): the default and one other build, and the combinations
meant to fail are classed as compile, launch or resource failures before any run, never as results."""

from __future__ import annotations

import importlib.util
import math

import pytest

from kernel_agent.recording import RECORDINGS
from kernel_agent.skeletons import port
from kernel_agent.task import discover, load_task
from sandbox import MAX_COMBINATIONS, Evaluator, Status, load_kernel, parse_directives
from tests.paths import ROOT

HAS_NVRTC = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None
WIDE = ROOT / "tasks" / "wide"
ORIGINALS = {  # wide task -> the suite task it copies
    "matmul_fp32_wide": ROOT / "tasks" / "level1" / "matmul_fp32.yaml",
    "matmul_fp16_wide": ROOT / "tasks" / "level1" / "matmul_fp16.yaml",
    "transpose_wide": ROOT / "tasks" / "level1" / "transpose.yaml",
    "maxpool2d_wide": ROOT / "tasks" / "level1" / "maxpool2d.yaml",
    "attention_wide": ROOT / "tasks" / "level2" / "attention.yaml",
    "layernorm_wide": ROOT / "tasks" / "level1" / "layernorm.yaml",
}
# wide tasks whose variant is a skeleton filled with its example fills, not the original's expert kernel
SKELETON_FILLS = {"layernorm_wide": ROOT / "kernel_agent" / "skeletons" / "examples" / "layernorm.md"}
FAILS = (Status.compile_error, Status.launch_error, Status.resource_error)

# Per task: combinations that build (besides the defaults), and combinations that must fail with the
# given class. Cheap to compile: the failures are mostly caught by a static_assert or ptxas at once.
CASES = {
    "matmul_fp32_wide": (
        [{"BM": "64", "BN": "32", "TM": "4", "TN": "4", "BK": "16", "UNROLL": "4", "DOUBLE_BUFFER": "0"}],
        [({"BM": "256", "BN": "256", "TM": "4", "TN": "4"}, Status.compile_error),       # 4096 threads
         ({"BM": "32", "BN": "32", "TM": "16", "TN": "16"}, Status.compile_error)],      # 4 threads
    ),
    "matmul_fp16_wide": (
        [{"WARPS_M": "1", "WARPS_N": "4", "FRAG_M": "1", "FRAG_N": "1", "BK": "16", "STAGES": "4"}],
        [({"WARPS_M": "8", "WARPS_N": "8"}, Status.compile_error),                         # 2048 threads
         ({"WARPS_M": "8", "WARPS_N": "1", "FRAG_M": "4", "FRAG_N": "1", "BK": "128", "STAGES": "4"},
          Status.resource_error)],                                                          # 576 KiB smem
    ),
    "transpose_wide": (
        [{"TILE": "128", "VEC": "4", "PAD": "1", "BLOCK_ROWS": "32", "TILES_PER_BLOCK": "4", "STREAM": "0",
          "DYN_SMEM": "1"}],
        [({"TILE": "128", "DYN_SMEM": "0"}, Status.compile_error),                        # 64.5 KiB static smem
         ({"TILE": "128", "VEC": "1", "BLOCK_ROWS": "16"}, Status.compile_error)],       # 2048 threads
    ),
    "maxpool2d_wide": (
        [{"BLOCK": "32", "OUT_W": "8", "OUT_H": "2", "VEC": "2", "BOUNDS": "2", "STREAM": "0"}],
        [({"BLOCK": "1024", "OUT_W": "8", "OUT_H": "8", "VEC": "4", "BOUNDS": "0"},
          Status.resource_error)],                                                          # registers
    ),
    "attention_wide": (
        [{"BLOCK_Q": "16", "BLOCK_K": "16", "KSPLIT": "16", "ROWS": "8", "PV_UNROLL": "1", "MIN_BLOCKS": "2"}],
        [({"BLOCK_Q": "128", "ROWS": "1"}, Status.compile_error),                          # 2048 threads
         ({"BLOCK_Q": "256", "BLOCK_K": "128", "ROWS": "8"}, Status.resource_error)],      # 332 KiB smem
    ),
    "layernorm_wide": (
        [{"BLOCK": "32", "ROWS_PER_BLOCK": "1", "VEC": "1", "CACHE_COLS": "0", "UNROLL": "8"}],
        [({"BLOCK": "64", "ROWS_PER_BLOCK": "4"}, Status.compile_error)],                  # 16 threads a row
    ),
}


def _variant(task):
    (label,) = [label for label in task.kernel_paths() if label != "baseline"]
    return label, load_kernel(task.kernel_paths()[label], include_roots=task.kernel_folders())


def test_every_wide_task_is_listed_here():
    assert sorted(load_task(path).name for path in discover(WIDE)) == sorted(ORIGINALS)


@pytest.mark.parametrize("name", sorted(ORIGINALS))
def test_a_wide_space_is_large_and_keeps_the_originals_task(name):
    task, original = load_task(WIDE / f"{name}.yaml"), load_task(ORIGINALS[name])
    label, kernel = _variant(task)
    assert 1_000 <= kernel.combinations <= MAX_COMBINATIONS
    assert task.family == original.family
    assert label in original.kernel_paths() or name in SKELETON_FILLS
    assert task.dims == original.dims and task.check_sizes == original.check_sizes
    assert task.outputs == original.outputs and task.params == original.params
    assert not (RECORDINGS / f"{name}.json").exists()  # never answered from the original's recording
    baseline, original_baseline = task.kernel_paths()["baseline"], original.kernel_paths()["baseline"]
    assert baseline.read_text() == original_baseline.read_text()


@pytest.mark.parametrize("name", sorted(SKELETON_FILLS))
def test_a_skeleton_space_is_the_skeleton_as_kagent_port_fills_it(name):
    """Only the header (knob lines, comments) differs from what `kagent port` writes with the example fills."""
    task = load_task(WIDE / f"{name}.yaml")
    label, kernel = _variant(task)
    instance = port(load_task(ORIGINALS[name]), SKELETON_FILLS[name].read_text())
    assert label == instance.skeleton

    def code(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.lstrip().startswith("//")]

    assert code(kernel.path.read_text()) == code(instance.source)
    port_knobs = parse_directives(instance.source).knobs
    assert kernel.combinations > math.prod(len(k.values) for k in port_knobs.values())


@pytest.mark.skipif(not HAS_NVRTC, reason="needs NVRTC (cuda-bindings)")
@pytest.mark.parametrize("name", sorted(ORIGINALS))
def test_a_wide_space_builds_where_it_should_and_fails_loudly_where_it_cannot(name):
    task = load_task(WIDE / f"{name}.yaml")
    label, kernel = _variant(task)
    builds, failures = CASES[name]
    kernels = [kernel, *(kernel.with_knobs(k) for k in builds), *(kernel.with_knobs(k) for k, _ in failures)]
    built = Evaluator(task.problem(), None, "sm_90").build(kernels, label)
    for b in built[:1 + len(builds)]:
        assert b.outcome.status is Status.ok and b.program is not None, (b.kernel.knobs, b.outcome.message)
    for b, (_, expected) in zip(built[1 + len(builds):], failures):
        assert b.outcome.status in FAILS and b.program is None, (b.kernel.knobs, b.outcome.message)
        assert b.outcome.status is expected, (b.kernel.knobs, b.outcome.status, b.outcome.message)
