"""`kagent check`, `kagent tasks validate`, `kagent sweep` and `kagent doctor`: one kernel, every task
file, every knob combination, and the machine."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import typer
from rich.markup import escape

from sandbox import (
    MAX_COMBINATIONS,
    BaselineFailed,
    DirectiveError,
    GpuWorker,
    KernelError,
    SandboxError,
    Settings,
    Status,
    ToolchainError,
    ceilings,
    check_flags,
    compile_source,
    detect_arch,
    emulator_unavailable,
    include_dirs,
    nvrtc_version,
    target_arch,
)

from ..check import check
from ..llm.settings import LLMConfigError, load_llm_config
from ..render import console, errors
from ..render.outcome import show_outcome
from ..render.progress import sweep_progress
from ..render.tables import show_validation
from ..task import TaskError, discover, load_task
from ..validate import validate_task
from .app import MAX_SEED, app, arch_option, check_positive, fail, knob_pairs, tasks_app


@app.command("check")
def check_command(
    task_file: Path = typer.Argument(..., help="Task YAML, e.g. tasks/level1/layernorm.yaml."),
    kernel: Path | None = typer.Argument(None, help="Kernel .cu file; default: the task's baseline."),
    knob: list[str] = typer.Option([], "--knob", "-k", help="Knob value NAME=VALUE (repeatable)."),
    flag: list[str] = typer.Option([], "--flag", help="Extra NVRTC flag, e.g. -use_fast_math (repeatable)."),
    compile_only: bool = typer.Option(False, "--compile-only", help="Compile and check resources only; no GPU needed."),
    emulate: bool = typer.Option(False, "--emulate",
                                 help="No GPU needed: compile, then run the kernel on the CPU emulator at the sizes "
                                      "small enough for it and compare with the reference (wrong results, "
                                      "out-of-bounds writes, crashes, hangs, races); nothing is timed."),
    as_json: bool = typer.Option(False, "--json", help="Print the Outcome as one JSON object."),
    arch: str | None = typer.Option(None, help="Target architecture, e.g. sm_90 (default: the GPU's)."),
    device: int = typer.Option(0, help="GPU index."),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="Seed of the random inputs."),
    budget_ms: float = typer.Option(400.0, help="Time spent in timed launches per kernel."),
    launch_timeout: float = typer.Option(10.0, help="Seconds one launch may run before it is killed."),
) -> None:
    """Compile a kernel, check it against the NumPy reference on every size, and time it.

    Prints the Outcome: status, resource usage, error detail, median time and quantiles, speedup
    against the task's baseline kernel (timed in the same run), and the roofline fraction.
    Exit code 0 only for a correct kernel.
    """
    check_positive(budget_ms=budget_ms, launch_timeout=launch_timeout)
    arch_option(arch)
    if problem := check_flags(flag):
        fail(2, f"--flag: {problem}")
    try:
        task = load_task(task_file)
        if emulate and (reason := emulator_unavailable()):
            fail(3, f"--emulate: {reason}")
        compile_only = compile_only or emulate
        if not compile_only and detect_arch(device) is None:
            fail(3, "no CUDA GPU found; use --compile-only to compile and check resources without one, or "
                    "--emulate to run it on the CPU emulator too")
        settings = Settings(seed=seed, budget_ms=budget_ms, launch_timeout_s=launch_timeout)
        if compile_only:
            outcome = check(task, kernel, knob_pairs(knob), flag, arch, settings=settings, emulate=emulate)
            if outcome.status is Status.not_run:  # what was asked for passed: the compile side (and the emulator)
                outcome.status = Status.ok
                if not emulate:
                    outcome.message = "compiled and launches resolved at every size (not run: --compile-only)"
        else:
            with GpuWorker(device) as worker:
                outcome = check(task, kernel, knob_pairs(knob), flag, arch, worker, settings)
    except (TaskError, KernelError, DirectiveError, BaselineFailed) as exc:
        fail(2, str(exc))
    except (ToolchainError, SandboxError) as exc:
        fail(3, str(exc))
    if as_json:
        print(outcome.model_dump_json(indent=2))
    else:
        show_outcome(outcome, console, title=escape(f"{task.name}: {kernel or 'baseline'}"))
    if outcome.status is not Status.ok or outcome.suspect:
        raise typer.Exit(1)


@tasks_app.command("validate")
def validate_command(
    path: Path = typer.Argument(Path("tasks"), help="A task file or a folder of them."),
    arch: str = typer.Option("sm_90", help="Architecture the kernels are compiled for."),
    no_compile: bool = typer.Option(False, "--no-compile", help="Skip compiling the kernels."),
    all_knobs: bool = typer.Option(False, "--all-knobs", help="Compile every knob combination, not only defaults."),
    quick: bool = typer.Option(False, "--quick", help="Run the reference only at the small check sizes, not at "
                                                     "the timed size (faster; misses weaknesses of the timed size)."),
    max_combinations: int = typer.Option(MAX_COMBINATIONS, min=1, help="With --all-knobs: refuse a kernel with more "
                                                                      "knob combinations than this."),
) -> None:
    """Check every task file: fields, reference, directives, and that every kernel compiles.

    The reference runs (in a child process, with a time limit) at every size, the timed one included:
    it must return without NaN, and a warning says when all zeros, a constant or the answer for other
    inputs would pass the tolerance. Exit code 2 when any task is invalid.
    """
    arch_option(arch)
    files = discover(path)
    if not files:
        fail(2, f"no task files (*.yaml) under {path}")
    failed = 0
    for file in files:
        report = validate_task(file, arch, compile_kernels=not no_compile, all_knobs=all_knobs, quick=quick,
                               max_combinations=max_combinations)
        show_validation(console, report)
        failed += not report.ok
    console.print(f"{len(files) - failed} of {len(files)} tasks valid")
    raise typer.Exit(2 if failed else 0)


@app.command("sweep")
def sweep_command(
    task_file: Path = typer.Argument(..., help="Task YAML."),
    variant: str | None = typer.Option(None, help="Sweep only this variant (and the baseline)."),
    out: Path | None = typer.Option(None, help="Replay cache to write (default results/sweeps/TASK-ARCH.json); "
                                                  "an existing one is resumed."),
    compile_only: bool = typer.Option(False, "--compile-only", help="Compile every combination; no GPU needed."),
    arch: str | None = typer.Option(None, help="Target architecture (default: the GPU's)."),
    device: int = typer.Option(0, help="GPU index."),
    budget_ms: float = typer.Option(200.0, help="Time spent in timed launches per candidate."),
    precision: float = typer.Option(0.0, min=0.0, max=0.5,
                                    help="Stop timing a candidate once its median is known to within this "
                                         "fraction (0: spend the whole budget). A sweep of thousands of "
                                         "combinations can afford 0.01."),
    max_combinations: int = typer.Option(MAX_COMBINATIONS, min=1, help="Refuse a task with more knob combinations."),
) -> None:
    """Evaluate every knob combination of a task's kernels and record a replay cache.

    One record per candidate with its knobs and full Outcome, plus the GPU, driver and compiler
    versions; later work replays the cache on machines with no GPU.
    """
    from ..recording import best, load
    from ..sweep import sweep

    check_positive(budget_ms=budget_ms)
    try:
        task = load_task(task_file)
    except TaskError as exc:
        fail(2, str(exc))
    if not compile_only and detect_arch(device) is None:
        fail(3, "no CUDA GPU found; use --compile-only to compile every combination without one")
    arch = target_arch(arch_option(arch))
    out = out or Path("results") / "sweeps" / f"{task.name}-{arch}.json"
    before = set()
    with sweep_progress(console, task.name) as show:
        worker = None if compile_only else GpuWorker(device)
        try:
            if out.exists():
                before = {r.outcome.candidate_id for r in load(out).records}
            settings = Settings(budget_ms=budget_ms, precision=precision)
            cache = sweep(task, task_file, out, variant, worker, arch, settings, show, max_combinations)
        except (KernelError, KeyError, ValueError, RuntimeError) as exc:
            fail(2, str(exc))
        except KeyboardInterrupt:
            errors.print(f"interrupted: what was measured is kept in {out}; run the same command to resume",
                         markup=False)
            raise typer.Exit(130) from None
        finally:
            if worker is not None:
                worker.close()
    failures = Counter(r.outcome.status.value for r in cache.records if r.outcome.candidate_id not in before)
    console.print(f"{len(cache.records)} candidates recorded in {out}; this run: {dict(failures) or 'nothing new'}",
                  markup=False)
    if (top := best(cache)) and top.outcome.timing:
        console.print(f"best: {top.kernel} {top.knobs} {top.outcome.timing.median_ms:.4f} ms "
                      f"({top.outcome.speedup or 1:.2f}x the baseline)")


@app.command()
def doctor(
    device: int = typer.Option(0, help="GPU index."),
    remeasure: bool = typer.Option(False, help="Measure the bandwidth again instead of using the cache."),
) -> None:
    """Print the GPU, driver, NVRTC and CuPy versions, a compile test, and the measured ceilings."""
    try:
        console.print(f"NVRTC {nvrtc_version()}; headers: {', '.join(include_dirs()) or 'none found'}", markup=False)
        arch = target_arch()
        result = compile_source('extern "C" __global__ void probe(float* x) { x[threadIdx.x] *= 2.f; }',
                                ["probe"], arch=arch, use_cache=False)
        console.print(f"compile test for {arch}: {'ok' if result.ok else 'FAILED'}")
        if not result.ok:
            console.print(result.log, markup=False)
    except ToolchainError as exc:
        fail(3, str(exc))
    _doctor_llm()
    if detect_arch(device) is None:
        console.print("GPU: none found (compile-only machine: `kagent check --compile-only` works)")
        return
    try:
        with GpuWorker(device) as worker:
            info = worker.start()
            console.print(json.dumps(info, indent=2), markup=False)
            measured = ceilings(worker, remeasure=remeasure)
    except SandboxError as exc:
        fail(3, str(exc))
    console.print(f"device-to-device copy bandwidth: {measured['copy_gbps']:.0f} GB/s (read + write)")
    console.print(f"fp32 FMA rate: {measured['fma_gflops']:.0f} GFLOP/s")


def _doctor_llm() -> None:
    """Whether the configured LLM endpoint answers, and which models it serves."""
    from ..llm.client import LLMClient

    try:
        config = load_llm_config()
    except LLMConfigError as exc:
        console.print(f"LLM: configuration error: {exc}", markup=False)
        return
    if config is None:
        console.print("LLM: none configured (set KAGENT_LLM_MODEL and OPENAI_BASE_URL, or pass --llm to optimize)")
        return
    ok, message = LLMClient(config).probe()
    console.print(f"LLM: {'ok' if ok else 'NOT answering'}: {message}", markup=False)
