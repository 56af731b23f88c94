"""The `kagent` command line.

Exit codes: 0 success (for `check`: a correct kernel); 1 the kernel failed (any failure class, or a
suspect timing); 2 bad input (task, kernel file, knob, flag); 3 the environment (no GPU, no NVRTC).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from sandbox import (
    DirectiveError, GpuWorker, SandboxError, Settings, Status, ToolchainError, ceilings, compile_source,
    detect_arch, include_dirs, nvrtc_version, target_arch,
)

from .check import BaselineError, check
from .kernel import KernelError
from .render import show_outcome
from .task import TaskError, discover, load_task
from .validate import validate_task

app = typer.Typer(help="kagent: write, repair and tune CUDA C kernels, proven correct on a real GPU.",
                  no_args_is_help=True, add_completion=False)
tasks_app = typer.Typer(help="Work with task files.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
console = Console()
errors = Console(stderr=True)


def _fail(code: int, message: str) -> None:
    errors.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _parse_knobs(pairs: list[str]) -> dict[str, str]:
    knobs = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name or not value:
            _fail(2, f"--knob expects NAME=VALUE, got {pair!r}")
        knobs[name.strip()] = value.strip()
    return knobs


@app.command("check")
def check_command(
    task_file: Path = typer.Argument(..., help="Task YAML, e.g. tasks/layernorm.yaml."),
    kernel: Optional[Path] = typer.Argument(None, help="Kernel .cu file; default: the task's baseline."),
    knob: List[str] = typer.Option([], "--knob", "-k", help="Knob value NAME=VALUE (repeatable)."),
    flag: List[str] = typer.Option([], "--flag", help="Extra NVRTC flag, e.g. -use_fast_math (repeatable)."),
    compile_only: bool = typer.Option(False, "--compile-only", help="Compile and check resources only; no GPU needed."),
    as_json: bool = typer.Option(False, "--json", help="Print the Outcome as one JSON object."),
    arch: Optional[str] = typer.Option(None, help="Target architecture, e.g. sm_90 (default: the GPU's)."),
    device: int = typer.Option(0, help="GPU index."),
    seed: int = typer.Option(0, help="Seed of the random inputs."),
    budget_ms: float = typer.Option(400.0, help="Time spent in timed launches per kernel."),
    launch_timeout: float = typer.Option(10.0, help="Seconds one launch may run before it is killed."),
) -> None:
    """Compile a kernel, check it against the NumPy reference on every size, and time it.

    Prints the Outcome: status, resource usage, error detail, median time and quantiles, speedup
    against the task's baseline kernel (timed in the same run), and the roofline fraction.
    Exit code 0 only for a correct kernel.
    """
    try:
        task = load_task(task_file)
        if not compile_only and detect_arch(device) is None:
            _fail(3, "no CUDA GPU found; use --compile-only to compile and check resources without one")
        settings = Settings(seed=seed, budget_ms=budget_ms, launch_timeout_s=launch_timeout)
        if compile_only:
            outcome = check(task, kernel, _parse_knobs(knob), flag, arch)
            if outcome.status is Status.ok:
                outcome.message = "compiled and launches resolved at every size (not run: --compile-only)"
        else:
            with GpuWorker(device) as worker:
                outcome = check(task, kernel, _parse_knobs(knob), flag, arch, worker, settings)
    except (TaskError, KernelError, DirectiveError, BaselineError) as exc:
        _fail(2, str(exc))
    except (ToolchainError, SandboxError) as exc:
        _fail(3, str(exc))
    if as_json:
        print(outcome.model_dump_json(indent=2))
    else:
        show_outcome(outcome, console, title=f"{task.name}: {kernel or 'baseline'}")
    if outcome.status is not Status.ok or outcome.flags:
        raise typer.Exit(1)


@tasks_app.command("validate")
def validate_command(
    path: Path = typer.Argument(Path("tasks"), help="A task file or a folder of them."),
    arch: str = typer.Option("sm_90", help="Architecture the kernels are compiled for."),
    no_compile: bool = typer.Option(False, "--no-compile", help="Skip compiling the kernels."),
    all_knobs: bool = typer.Option(False, "--all-knobs", help="Compile every knob combination, not only defaults."),
) -> None:
    """Check every task file: fields, reference, directives, and that every kernel compiles."""
    files = discover(path)
    if not files:
        _fail(2, f"no task files (*.yaml) under {path}")
    failed = 0
    for file in files:
        report = validate_task(file, arch, compile_kernels=not no_compile, all_knobs=all_knobs)
        mark = "[green]ok[/]" if report.ok else "[red]FAIL[/]"
        console.print(f"{mark} {file}", highlight=False)
        for label, text in report.kernels.items():
            console.print(f"    {label}: {text}", highlight=False)
        for error in report.errors:
            console.print(f"    [red]{error}[/]", highlight=False)
        for warning in report.warnings:
            console.print(f"    [yellow]warning:[/] {warning}", highlight=False)
        failed += not report.ok
    console.print(f"{len(files) - failed} of {len(files)} tasks valid")
    raise typer.Exit(2 if failed else 0)


@app.command("sweep")
def sweep_command(
    task_file: Path = typer.Argument(..., help="Task YAML."),
    variant: Optional[str] = typer.Option(None, help="Sweep only this variant (and the baseline)."),
    out: Optional[Path] = typer.Option(None, help="Replay cache to write (default results/sweeps/TASK-ARCH.json); "
                                                  "an existing one is resumed."),
    compile_only: bool = typer.Option(False, "--compile-only", help="Compile every combination; no GPU needed."),
    arch: Optional[str] = typer.Option(None, help="Target architecture (default: the GPU's)."),
    device: int = typer.Option(0, help="GPU index."),
    budget_ms: float = typer.Option(200.0, help="Time spent in timed launches per candidate."),
) -> None:
    """Evaluate every knob combination of a task's kernels and record a replay cache.

    One record per candidate with its knobs and full Outcome, plus the GPU, driver and compiler
    versions; later work replays the cache on machines with no GPU.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from .sweep import best, sweep

    try:
        task = load_task(task_file)
    except TaskError as exc:
        _fail(2, str(exc))
    if not compile_only and detect_arch(device) is None:
        _fail(3, "no CUDA GPU found; use --compile-only to compile every combination without one")
    arch = target_arch(arch)
    out = out or Path("results") / "sweeps" / f"{task.name}-{arch}.json"
    failures: dict[str, int] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(f"sweeping {task.name}", total=None)

        def show(record, number, total):
            status = record.outcome.status.value
            failures[status] = failures.get(status, 0) + 1
            progress.update(bar, completed=number, total=total,
                            description=f"{task.name}: {record.kernel} {record.knobs} -> {status}")

        worker = None if compile_only else GpuWorker(device)
        try:
            cache = sweep(task, task_file, out, variant, worker, arch, Settings(budget_ms=budget_ms), show)
        except (KernelError, KeyError, ValueError, RuntimeError) as exc:
            _fail(2, str(exc))
        except KeyboardInterrupt:
            errors.print(f"interrupted: what was measured is kept in {out}; run the same command to resume")
            raise typer.Exit(130) from None
        finally:
            if worker is not None:
                worker.close()
    console.print(f"{len(cache.records)} candidates recorded in {out}; this run: {failures or 'nothing new'}")
    if top := best(cache):
        console.print(f"best: {top.kernel} {top.knobs} {top.outcome.timing.median_ms:.4f} ms "
                      f"({top.outcome.speedup or 1:.2f}x the baseline)")


@app.command()
def doctor(
    device: int = typer.Option(0, help="GPU index."),
    remeasure: bool = typer.Option(False, help="Measure the bandwidth again instead of using the cache."),
) -> None:
    """Print the GPU, driver, NVRTC and CuPy versions, a compile test, and the measured ceilings."""
    try:
        console.print(f"NVRTC {nvrtc_version()}; headers: {', '.join(include_dirs()) or 'none found'}")
        arch = target_arch()
        result = compile_source('extern "C" __global__ void probe(float* x) { x[threadIdx.x] *= 2.f; }',
                                ["probe"], arch=arch, use_cache=False)
        console.print(f"compile test for {arch}: {'ok' if result.ok else 'FAILED'}")
        if not result.ok:
            console.print(result.log, markup=False)
    except ToolchainError as exc:
        _fail(3, str(exc))
    if detect_arch(device) is None:
        console.print("GPU: none found (compile-only machine: `kagent check --compile-only` works)")
        return
    try:
        with GpuWorker(device) as worker:
            info = worker.start()
            console.print(json.dumps(info, indent=2))
            measured = ceilings(worker, remeasure=remeasure)
    except SandboxError as exc:
        _fail(3, str(exc))
    console.print(f"device-to-device copy bandwidth: {measured['copy_gbps']:.0f} GB/s (read + write)")
    console.print(f"fp32 FMA rate: {measured['fma_gflops']:.0f} GFLOP/s")


@app.command()
def optimize(
    task_file: Path = typer.Argument(..., help="Task YAML, e.g. tasks/layernorm.yaml."),
    device: int = typer.Option(0, help="GPU index."),
    compile_only: bool = typer.Option(False, "--compile-only", help="Compile only; no GPU needed."),
) -> None:
    """Optimise a task's kernel. The search is not built yet: this evaluates the task's own kernels."""
    console.print("[yellow]the optimize search is not built yet: evaluating the task's kernels as they are[/]")
    try:
        task = load_task(task_file)
    except TaskError as exc:
        _fail(2, str(exc))
    worker = None if compile_only or detect_arch(device) is None else GpuWorker(device)
    if worker is None and not compile_only:
        console.print("no GPU found: compiling only")
    try:
        for label, path in task.kernel_paths().items():
            show_outcome(check(task, path, worker=worker), console, title=f"{task.name}: {label}")
    except (KernelError, BaselineError) as exc:
        _fail(2, str(exc))
    finally:
        if worker is not None:
            worker.close()


def main() -> None:
    app()
