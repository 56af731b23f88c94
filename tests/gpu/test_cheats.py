"""Every cheating or broken kernel gets its failure class, and the sandbox keeps serving after it."""

import time

import pytest

from kernel_agent.check import check
from sandbox import (
    Evaluator,
    Request,
    Settings,
    Status,
    load_kernel,
    outcome_from_reply,
    plan_program,
)
from tests.paths import KERNELS

pytestmark = pytest.mark.gpu

FAST = Settings(budget_ms=150, launch_timeout_s=5.0)
QUICK = FAST.model_copy(update={"precision": 0.005})  # timing sized to the noise, as a search times candidates

# kernel file -> (expected status, expected phase of the mismatch or None)
CHEATS = {
    "zero_output.cu": (Status.wrong_result, "check"),
    "first_row_only.cu": (Status.wrong_result, "check"),
    "untouched_output.cu": (Status.wrong_result, "check"),
    "modifies_input.cu": (Status.wrong_result, "inputs"),
    "out_of_bounds_write.cu": (Status.wrong_result, "guard"),
    # Rejected either way; its class depends on timing. Alone it is `nondeterministic`. Right after
    # other cheats, in a warm worker with fast (pinned) downloads, runs 2 to 5 came out identical on
    # the H200 and only the first differed, which reads as `wrong_result` "the first launch differs".
    "race.cu": ((Status.nondeterministic, Status.wrong_result), None),
    "timed_size_only.cu": (Status.wrong_result, "check"),
    "first_launch_only.cu": (Status.wrong_result, None),
    "cached_result.cu": (Status.wrong_result, None),
    "illegal_address.cu": (Status.runtime_error, None),
    "dynamic_smem_overrun.cu": (Status.runtime_error, None),
    "infinite_loop.cu": (Status.timeout, None),
    "too_many_registers.cu": (Status.resource_error, None),
    "too_much_shared_memory.cu": (Status.resource_error, None),
    "compile_error.cu": (Status.compile_error, None),
}


@pytest.mark.parametrize("settings", [FAST, QUICK], ids=["full-budget", "sized-to-noise"])
@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheat_is_caught_and_sandbox_recovers(name, settings, layernorm, worker):
    expected, phase = CHEATS[name]
    began = time.perf_counter()
    outcome = check(layernorm, KERNELS / name, worker=worker, settings=settings)
    print(f"\nVERDICT {name}: {outcome.status.value} in {time.perf_counter() - began:.2f} s: {outcome.message}")
    if isinstance(expected, tuple):  # varying output: either class, with the evidence that it varied
        assert outcome.status in expected and "differ" in outcome.message, outcome.model_dump_json(indent=2)
    else:
        assert outcome.status is expected, outcome.model_dump_json(indent=2)
    if phase is not None:
        assert outcome.mismatch is not None and outcome.mismatch.phase == phase
    starts, began = worker.starts, time.perf_counter()
    after = check(layernorm, worker=worker, settings=Settings(time_it=False))
    restarted = f"new worker ready in {worker.last_restart_s:.2f} s, " if worker.starts > starts else ""
    print(f"RECOVERY after {name}: {restarted}baseline checked on every size {time.perf_counter() - began:.2f} s "
          "after the verdict")
    assert after.status is Status.ok, after.message


def test_forced_resource_checks_without_ptxas_figures(layernorm, worker):
    """The worker refuses an over-large block even when the CPU-side check is bypassed."""
    kernel = load_kernel(KERNELS / "too_many_registers.cu")
    (built,) = Evaluator(layernorm.problem(), None, "sm_90").build([kernel])
    assert built.outcome.status is Status.resource_error  # caught on the CPU from ptxas's figures
    compiled = kernel.compile("sm_90")
    prog = plan_program("candidate", kernel, compiled, layernorm.problem())
    request = Request(reference=layernorm.function_spec(layernorm.reference), sizes=layernorm.problem().sizes,
                      timed_index=0, programs=[prog], settings=FAST)
    reply = outcome_from_reply(worker.evaluate(request))
    assert reply.status is Status.resource_error, reply.message


def test_a_reference_that_exits_is_the_tasks_failure_and_the_worker_serves_on(tmp_path, layernorm, worker):
    """A task's reference that calls sys.exit inside the worker is a sandbox error naming it, not a
    crash blamed on the kernel (it used to kill the worker: `runtime_error`, the GPU worker died)."""
    import shutil

    from kernel_agent.task import load_task
    from sandbox import SandboxError

    shutil.copytree(layernorm.root / "layernorm", tmp_path / "layernorm")
    (tmp_path / "layernorm" / "reference.py").write_text("import sys\n\ndef layernorm(**_):\n    sys.exit(3)\n")
    (tmp_path / "layernorm.yaml").write_text((layernorm.root / "layernorm.yaml").read_text())
    with pytest.raises(SandboxError, match="SystemExit"):
        check(load_task(tmp_path / "layernorm.yaml"), worker=worker, settings=FAST)
    assert check(layernorm, worker=worker, settings=Settings(time_it=False)).status is Status.ok
