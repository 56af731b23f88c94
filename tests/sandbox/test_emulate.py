"""The CPU emulator (sandbox/emulate.py): every suite kernel it can run is correct on it, every repair
corpus kernel gets the failure class the H200 gives it, every cheat it can see is caught, and a kernel
that tries to reach the host is killed. No GPU needed; each test skips where the emulator cannot run."""

from __future__ import annotations

import json

import pytest

from kernel_agent.check import check
from kernel_agent.optimize.space import Space
from kernel_agent.task import load_task
from sandbox import Evaluator, Status, emulator_unavailable, load_kernel
from sandbox import emulate as emulate_module
from tests.paths import KERNELS, LAYERNORM, ROOT
from tests.repair.corpus import corpus_files, read_entry

pytestmark = pytest.mark.skipif(emulator_unavailable() is not None, reason=str(emulator_unavailable()))

SUITE = sorted(p for folder in ("level1", "level2", "naive") for p in (ROOT / "tasks" / folder).glob("*.yaml"))


@pytest.fixture
def quick_timeout(monkeypatch):
    monkeypatch.setattr(emulate_module, "RUN_TIMEOUT_S", 6.0)


def _kernels_of(task_file):
    task = load_task(task_file)
    space = Space.of_task(task, generic=False)
    return [(label, space.build(space.default(label))) for label in space.kernels]


@pytest.mark.parametrize("task_file", SUITE, ids=lambda p: p.stem)
def test_every_suite_kernel_is_correct_on_the_emulator(task_file):
    """The suite's own kernels (baselines and variants, at their default knobs) are correct on the GPU, so
    the emulator must find nothing wrong with them: no false failure, or the loop would throw good kernels
    away. Kernels it cannot run (inline PTX, tensor-core fragments) say so."""
    task = load_task(task_file)
    evaluator = Evaluator(task.problem(), None, "sm_90", emulate=True)
    for label, kernel in _kernels_of(task_file):
        (outcome,) = evaluator.evaluate([kernel])
        assert outcome.status is Status.not_run, f"{label}: {outcome.status.value}: {outcome.message}"
        assert outcome.message.startswith(("correct at", "not emulated: the CPU emulator does not run")), \
            f"{label}: {outcome.message}"
        if outcome.message.startswith("correct at"):
            assert outcome.sizes_checked, label


@pytest.mark.parametrize("entry", [read_entry(p) for p in corpus_files()], ids=lambda e: e.name)
def test_each_repair_corpus_kernel_gets_the_class_the_gpu_gives(entry, tmp_path, quick_timeout):
    """The corpus's expected classes were read on the H200; the emulator agrees on every one of them,
    races and misaligned vector loads included."""
    given = tmp_path / f"{entry.name}.cu"
    given.write_text(entry.kernel)
    outcome = check(load_task(entry.task_path), given, include_roots=(entry.from_path.parent,), emulate=True)
    assert outcome.status.value == entry.expect, outcome.message
    if entry.expect in ("wrong_result", "nondeterministic"):
        assert outcome.mismatch is not None and outcome.mismatch.size, outcome.message


CAUGHT = {
    "zero_output.cu": (Status.wrong_result, "check"),
    "first_row_only.cu": (Status.wrong_result, "check"),
    "untouched_output.cu": (Status.wrong_result, "check"),
    "timed_size_only.cu": (Status.wrong_result, "check"),
    "modifies_input.cu": (Status.wrong_result, "inputs"),
    "out_of_bounds_write.cu": (Status.wrong_result, "guard"),
    "race.cu": (Status.wrong_result, "check"),
    "illegal_address.cu": (Status.runtime_error, None),
    "dynamic_smem_overrun.cu": (Status.runtime_error, None),
    "infinite_loop.cu": (Status.timeout, None),
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_cheats_are_caught_on_the_emulator(name, quick_timeout):
    expected, phase = CAUGHT[name]
    outcome = check(load_task(LAYERNORM), KERNELS / name, emulate=True)
    assert outcome.status is expected, outcome.message
    assert "(CPU emulator)" in outcome.message
    if phase is not None:
        assert outcome.mismatch is not None and outcome.mismatch.phase == phase


@pytest.mark.parametrize("name", ["first_launch_only.cu", "cached_result.cu"])
def test_cheats_on_launch_state_are_left_to_the_gpu(name):
    """Every emulated run is a fresh process, so state kept between launches cannot pay off there: these
    two pass on the emulator (as `not_run`, never `ok`) and are caught by the GPU check (test_cheats)."""
    outcome = check(load_task(LAYERNORM), KERNELS / name, emulate=True)
    assert outcome.status is Status.not_run and outcome.message.startswith("correct at")


def test_a_kernel_that_reaches_for_the_host_is_killed(tmp_path):
    """NVRTC compiles the kernel; on the emulator its host branch calls open() to create a file. seccomp's
    strict mode kills the process at the call: a runtime error, and the file is not there."""
    target = tmp_path / "escaped"
    source = (KERNELS / "host_escape.cu").read_text().replace("/tmp/kagent_emulator_escape", str(target))
    kernel_file = tmp_path / "host_escape.cu"
    kernel_file.write_text(source)
    task = load_task(LAYERNORM)
    assert check(task, kernel_file).status is Status.not_run  # NVRTC builds it: only the emulator can run it
    outcome = check(task, kernel_file, emulate=True)
    assert outcome.status is Status.runtime_error and "system call" in outcome.message, outcome.message
    assert not target.exists()


def test_what_the_emulator_cannot_run_is_said_not_judged(tmp_path):
    kernel_file = tmp_path / "ptx.cu"
    source = (ROOT / "tasks" / "level1" / "add" / "naive.cu").read_text()
    assert "out[i] = a[i] + b[i];" in source
    kernel_file.write_text(source.replace("out[i] = a[i] + b[i];", 'asm volatile(""); out[i] = a[i] + b[i];'))
    outcome = check(load_task(ROOT / "tasks" / "level1" / "add.yaml"), kernel_file, emulate=True)
    assert outcome.status is Status.not_run and "does not run inline PTX" in outcome.message


def test_a_race_between_warps_differs_between_the_two_schedules(tmp_path):
    """The emulator runs each block's threads in two orders; a kernel whose result depends on the order
    (a missing __syncthreads between warps) is nondeterministic, with the differing elements named."""
    kernel_file = tmp_path / "racy_sum.cu"
    kernel_file.write_text(RACY_ROW_SUM)
    outcome = check(load_task(ROOT / "tasks" / "level1" / "row_sum.yaml"), kernel_file, emulate=True)
    assert outcome.status is Status.nondeterministic, outcome.message
    assert "differ between two schedules" in outcome.message


def test_a_sized_extern_shared_array_is_static_as_nvrtc_makes_it(tmp_path):
    """NVRTC reads `extern __shared__ float part[2];` as a static array (warning 20044), not as dynamic
    shared memory: the emulator builds it the same way, so the kernel runs (and is correct) with no `smem`
    bytes asked for; the dynamic array beside it is still bounded by the launch's bytes."""
    sized = RACY_ROW_SUM.replace("__shared__ float part[2];", "extern __shared__ float part[2];").replace(
        "if (threadIdx.x == 0) y", "__syncthreads();\n    if (threadIdx.x == 0) y")
    assert sized.count("extern __shared__ float part[2];") == 1 and "__syncthreads();" in sized
    task = load_task(ROOT / "tasks" / "level1" / "row_sum.yaml")
    kernel_file = tmp_path / "sized_extern.cu"
    kernel_file.write_text(sized)
    outcome = check(task, kernel_file, emulate=True)
    assert outcome.status is Status.not_run and outcome.message.startswith("correct at"), outcome.message
    with_dynamic = sized.replace("extern __shared__ float part[2];",
                                 "extern __shared__ float part[2];\n    extern __shared__ float spill[];\n"
                                 "    spill[threadIdx.x] = 0.f;")
    kernel_file.write_text(with_dynamic)
    outcome = check(task, kernel_file, emulate=True)
    assert outcome.status is Status.runtime_error and "dynamic shared memory past" in outcome.message, \
        outcome.message


RACY_ROW_SUM = """\
// @kagent entry: row_sum
// @kagent grid: rows
// @kagent block: 64
extern "C" __global__ void row_sum(const float* x, float* y, int rows, int cols) {
    __shared__ float part[2];
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += 64) s += x[(size_t)blockIdx.x * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = s;
    if (threadIdx.x == 0) y[blockIdx.x] = part[0] + part[1];  // no __syncthreads: warp 1 may not have written
}
"""


def test_a_kernel_built_once_is_not_built_again(tmp_path, monkeypatch):
    """The binary is cached by everything that goes into it: the second check builds nothing."""
    monkeypatch.setenv("KAGENT_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    real = emulate_module.subprocess.run

    def counting(command, *args, **kwargs):
        calls.append(command[0])
        return real(command, *args, **kwargs)

    monkeypatch.setattr(emulate_module.subprocess, "run", counting)
    kernel = load_kernel(ROOT / "tasks" / "level1" / "add" / "naive.cu")
    task = load_task(ROOT / "tasks" / "level1" / "add.yaml")
    evaluator = Evaluator(task.problem(), None, "sm_90", emulate=True)
    evaluator.evaluate([kernel])
    builds = sum(1 for c in calls if not c.endswith(".bin"))
    evaluator.evaluate([kernel])
    assert builds == 1 and sum(1 for c in calls if not c.endswith(".bin")) == 1


SCALED_ADD = """// @kagent entry: add
// @kagent grid: ceil_div(n, 256)
// @kagent block: 256
// @kagent smem: 0
// @kagent knob SCALE [compute]: 1 2

extern "C" __global__ void add(const float* a, const float* b, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (a[i] + b[i]) * SCALE;
}
"""


def test_each_knob_combination_runs_its_own_binary(tmp_path, monkeypatch):
    """Knob values reach the build as -D definitions, so they are part of the cache key: a file checked at
    a correct combination and then at a wrong one is judged wrong the second time (and again right after)."""
    monkeypatch.setenv("KAGENT_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "scaled_add.cu"
    path.write_text(SCALED_ADD)
    kernel = load_kernel(path)
    task = load_task(ROOT / "tasks" / "level1" / "add.yaml")
    evaluator = Evaluator(task.problem(), None, "sm_90", emulate=True)
    verdicts = [evaluator.evaluate([kernel.with_knobs({"SCALE": scale})])[0] for scale in ("1", "2", "1")]
    assert [o.message.startswith("correct at") for o in verdicts] == [True, False, True], \
        [o.message for o in verdicts]
    assert verdicts[1].status is Status.wrong_result
    assert len(list((emulate_module.cache_dir() / "emulator").glob("*.bin"))) == 2


def test_check_emulate_on_the_command_line():
    """`kagent check --emulate`: exit 0 with the sizes it was correct at, exit 1 with the evidence."""
    from typer.testing import CliRunner

    from kernel_agent.cli import app

    good = CliRunner().invoke(app, ["check", str(LAYERNORM), "--emulate", "--json"])
    assert good.exit_code == 0, good.output
    outcome = json.loads(good.output)
    assert outcome["message"].startswith("correct at") and outcome["sizes_checked"]
    bad = CliRunner().invoke(app, ["check", str(LAYERNORM), str(KERNELS / "zero_output.cu"), "--emulate", "--json"])
    assert bad.exit_code == 1 and json.loads(bad.output)["mismatch"]["first_bad"]


def test_emulate_asks_for_a_compile_only_run(tmp_path):
    from typer.testing import CliRunner

    from kernel_agent.cli import app

    result = CliRunner().invoke(app, ["optimize", str(LAYERNORM), "--emulate", "--executor", "replay",
                                      "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--executor compile-only" in " ".join(result.output.split())


PORT_FIXTURES = sorted((ROOT / "tests" / "data" / "ports").glob("*.md"))


@pytest.mark.parametrize("fill", PORT_FIXTURES, ids=lambda p: p.stem)
def test_every_hand_written_port_is_correct_on_the_emulator(fill, tmp_path):
    """The skeleton library's instances for the naive-only tasks (the fixtures the H200 checks in
    tests/gpu/test_ports.py) are correct on the emulator too: the skeletons' shuffles, shared memory,
    vector loads and block carries run there as written."""
    import re

    from kernel_agent.skeletons import instantiate, library, parse_fills

    text = fill.read_text()
    skeleton = library()[re.match(r"skeleton:\s*(\w+)", text).group(1)]
    task = load_task(ROOT / "tasks" / "naive" / f"{fill.stem}.yaml")
    kernel_file = tmp_path / f"{fill.stem}.cu"
    kernel_file.write_text(instantiate(skeleton, task, parse_fills(text, skeleton).values).source)
    outcome = check(task, kernel_file, emulate=True)
    assert outcome.status is Status.not_run and outcome.message.startswith("correct at"), outcome.message
