"""The `kagent` command line.

Exit codes: 0 success (for `check`: a correct kernel); 1 the kernel failed (any failure class, or a
suspect timing); 2 bad input (task, kernel file, knob, flag); 3 the environment (no GPU, no NVRTC).
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import warnings
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
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
    UnsupportedArch,
    ceilings,
    check_arch,
    check_flags,
    compile_source,
    detect_arch,
    gpu_count,
    include_dirs,
    nvrtc_version,
    target_arch,
)

from .check import check
from .llm.settings import LLMConfigError, load_llm_config
from .optimize.run_config import LLMSettings
from .optimize.session import (
    Hooks,
    OptimizeInputError,
    OptimizeOptions,
    execute,
    new_run,
    resume_run,
)
from .render import show_outcome
from .task import TaskError, discover, load_task
from .validate import validate_task

app = typer.Typer(help="kagent: write, repair and tune CUDA C kernels, proven correct on a real GPU.",
                  no_args_is_help=True, add_completion=False, rich_markup_mode="markdown")
tasks_app = typer.Typer(help="Work with task files.", no_args_is_help=True, rich_markup_mode="markdown")
app.add_typer(tasks_app, name="tasks")
# No emoji codes (":x:" in a compile log is text) and no guessing at highlights; every piece of user or
# compiler text that goes into a markup string is escaped (a path with "[/x]" is text too).
console = Console(emoji=False, highlight=False)
errors = Console(stderr=True, emoji=False, highlight=False)


@app.callback()
def _setup() -> None:
    """A warning (e.g. an unwritable compile cache) is one yellow line, like every other notice."""
    warnings.showwarning = lambda message, category, *_, **__: _notice(f"warning: {message}")


def _fail(code: int, message: str) -> None:
    errors.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


MAX_SEED = 2**63 - 1  # seeds and token budgets are stored as SQLite's signed 64-bit integers
MAX_BUDGET = 1_000_000
MAX_BATCH = 1024


def _check_positive(**values: float | None) -> None:
    """Times and budgets must be finite and above zero (`nan`, `inf` and `-5` are refused, exit 2)."""
    for name, value in values.items():
        if value is not None and not (math.isfinite(value) and value > 0):
            _fail(2, f"--{name.replace('_', '-')} must be a finite number above 0, got {value}")


def _check_arch(arch: str | None) -> str | None:
    """An --arch NVRTC cannot compile for is bad input (exit 2), named with the ones it can."""
    if arch is not None:
        try:
            check_arch(arch)
        except (UnsupportedArch, ToolchainError, ValueError) as exc:
            _fail(2, f"--arch {arch}: {exc}")
    return arch


def _notice(text: str) -> None:
    errors.print(f"[yellow]{escape(text)}[/]")


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
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="Seed of the random inputs."),
    budget_ms: float = typer.Option(400.0, help="Time spent in timed launches per kernel."),
    launch_timeout: float = typer.Option(10.0, help="Seconds one launch may run before it is killed."),
) -> None:
    """Compile a kernel, check it against the NumPy reference on every size, and time it.

    Prints the Outcome: status, resource usage, error detail, median time and quantiles, speedup
    against the task's baseline kernel (timed in the same run), and the roofline fraction.
    Exit code 0 only for a correct kernel.
    """
    _check_positive(budget_ms=budget_ms, launch_timeout=launch_timeout)
    _check_arch(arch)
    if problem := check_flags(flag):
        _fail(2, f"--flag: {problem}")
    try:
        task = load_task(task_file)
        if not compile_only and detect_arch(device) is None:
            _fail(3, "no CUDA GPU found; use --compile-only to compile and check resources without one")
        settings = Settings(seed=seed, budget_ms=budget_ms, launch_timeout_s=launch_timeout)
        if compile_only:
            outcome = check(task, kernel, _parse_knobs(knob), flag, arch)
            if outcome.status is Status.not_run:  # what --compile-only asks for: every compile-side check passed
                outcome.status = Status.ok
                outcome.message = "compiled and launches resolved at every size (not run: --compile-only)"
        else:
            with GpuWorker(device) as worker:
                outcome = check(task, kernel, _parse_knobs(knob), flag, arch, worker, settings)
    except (TaskError, KernelError, DirectiveError, BaselineFailed) as exc:
        _fail(2, str(exc))
    except (ToolchainError, SandboxError) as exc:
        _fail(3, str(exc))
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
    _check_arch(arch)
    files = discover(path)
    if not files:
        _fail(2, f"no task files (*.yaml) under {path}")
    failed = 0
    for file in files:
        report = validate_task(file, arch, compile_kernels=not no_compile, all_knobs=all_knobs, quick=quick,
                               max_combinations=max_combinations)
        mark = "[green]ok[/]" if report.ok else "[red]FAIL[/]"
        console.print(f"{mark} {escape(str(file))}")
        for label, text in report.kernels.items():
            console.print(f"    {escape(label)}: {escape(text)}")
        for error in report.errors:
            console.print(f"    [red]{escape(error)}[/]")
        for warning in report.warnings:
            console.print(f"    [yellow]warning:[/] {escape(warning)}")
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
    max_combinations: int = typer.Option(MAX_COMBINATIONS, min=1, help="Refuse a task with more knob combinations."),
) -> None:
    """Evaluate every knob combination of a task's kernels and record a replay cache.

    One record per candidate with its knobs and full Outcome, plus the GPU, driver and compiler
    versions; later work replays the cache on machines with no GPU.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from .recording import best
    from .sweep import sweep

    _check_positive(budget_ms=budget_ms)
    try:
        task = load_task(task_file)
    except TaskError as exc:
        _fail(2, str(exc))
    if not compile_only and detect_arch(device) is None:
        _fail(3, "no CUDA GPU found; use --compile-only to compile every combination without one")
    arch = target_arch(_check_arch(arch))
    out = out or Path("results") / "sweeps" / f"{task.name}-{arch}.json"
    failures: dict[str, int] = {}
    columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(f"sweeping {task.name}", total=None)

        def show(record, number, total):
            status = record.outcome.status.value
            failures[status] = failures.get(status, 0) + 1
            progress.update(bar, completed=number, total=total,
                            description=f"{task.name}: {record.kernel} {record.knobs} -> {status}")

        worker = None if compile_only else GpuWorker(device)
        try:
            cache = sweep(task, task_file, out, variant, worker, arch, Settings(budget_ms=budget_ms), show,
                          max_combinations)
        except (KernelError, KeyError, ValueError, RuntimeError) as exc:
            _fail(2, str(exc))
        except KeyboardInterrupt:
            errors.print(f"interrupted: what was measured is kept in {out}; run the same command to resume", markup=False)
            raise typer.Exit(130) from None
        finally:
            if worker is not None:
                worker.close()
    console.print(f"{len(cache.records)} candidates recorded in {out}; this run: {failures or 'nothing new'}", markup=False)
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
        console.print(f"NVRTC {nvrtc_version()}; headers: {', '.join(include_dirs()) or 'none found'}", markup=False)
        arch = target_arch()
        result = compile_source('extern "C" __global__ void probe(float* x) { x[threadIdx.x] *= 2.f; }',
                                ["probe"], arch=arch, use_cache=False)
        console.print(f"compile test for {arch}: {'ok' if result.ok else 'FAILED'}")
        if not result.ok:
            console.print(result.log, markup=False)
    except ToolchainError as exc:
        _fail(3, str(exc))
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
        _fail(3, str(exc))
    console.print(f"device-to-device copy bandwidth: {measured['copy_gbps']:.0f} GB/s (read + write)")
    console.print(f"fp32 FMA rate: {measured['fma_gflops']:.0f} GFLOP/s")


def _doctor_llm() -> None:
    """Whether the configured LLM endpoint answers, and which models it serves."""
    from .llm.client import LLMClient

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


@app.command()
def optimize(
    task_file: Optional[Path] = typer.Argument(None, help="Task YAML, e.g. tasks/layernorm.yaml (not needed with --resume)."),
    budget: Optional[int] = typer.Option(None, min=1, max=MAX_BUDGET,
                                         help="Evaluations to spend, the baseline included [default: 40]."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Stop after this many seconds (then finish the report)."),
    strategy: str = typer.Option("agent", help="agent (planner + specialists), random, exhaustive or evolutionary."),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="Seed of the search (a replayed run is deterministic for a seed)."),
    batch: int = typer.Option(4, min=1, max=MAX_BATCH, help="Candidates proposed and ranked together."),
    executor: str = typer.Option("auto", help="gpu (measure now), replay (a recorded sweep), or auto: the GPU if there is one."),
    recording: Optional[Path] = typer.Option(None, help="Recorded sweep to replay [default: tasks/recordings/h200/TASK.json]."),
    fix: List[str] = typer.Option([], "--fix", help="Pin a knob, NAME=VALUE (repeatable)."),
    resume: Optional[str] = typer.Option(None, help="Continue an interrupted run: its folder or run id."),
    out: Path = typer.Option(Path("results"), help="Folder for runs (OUT/TASK/RUN/), the attempt store and learned policies."),
    warm_start: bool = typer.Option(True, "--warm-start/--no-warm-start",
                                    help="Start from the policies and failure rules learned by earlier runs."),
    device: int = typer.Option(0, help="GPU index."),
    budget_ms: float = typer.Option(200.0, help="Time spent in timed launches per candidate (GPU)."),
    llm: Optional[str] = typer.Option(None, "--llm", help="Model name: an LLM writes and repairs kernels "
                                      "[default: KAGENT_LLM_MODEL or the config file's, if any]."),
    llm_base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible endpoint [default: OPENAI_BASE_URL]."),
    llm_budget: Optional[int] = typer.Option(None, min=0, max=MAX_SEED,
                                             help="Tokens (prompt + completion) the LLM may spend in this run."),
    llm_every: int = typer.Option(2, min=1, help="Ask the LLM for a new kernel every N batches (and whenever stalled)."),
    no_llm: bool = typer.Option(False, "--no-llm", help="Offline specialists only, even if an LLM is configured."),
) -> None:
    """Search a task's kernels, knobs and generic edits for the fastest correct kernel.

    A planner picks which specialist (launch, memory, compute, reduction) acts on which parent; the
    specialists learn from rank rewards; failures become rules that prune later proposals. Writes
    OUT/TASK/RUN/ with best.cu, report.md, progress.png and attempts.jsonl. Without a GPU, replays the
    task's recorded H200 sweep and says so. Ctrl-C loses nothing: --resume RUN continues. With an LLM
    (--llm or KAGENT_LLM_MODEL), it also writes and repairs kernels; see the README.
    """
    from .optimize.executors import ExecutorError
    from .optimize.run_config import RunFolderError
    from .optimize.store import JournalError

    _check_positive(time_limit=time_limit, budget_ms=budget_ms)
    run_dir, created = None, False
    try:
        if resume:
            run = resume_run(out, resume)
            run_dir, config = run.folder, run.config
            if budget is not None:
                config.budget = budget
            if time_limit is not None:
                config.time_limit_s = time_limit
            llm_url = _resume_llm(config, no_llm, llm, llm_base_url, llm_budget)
            console.print(f"resuming {config.run_id} ({config.task}, {config.strategy}, {config.executor})",
                          markup=False)
        else:
            if task_file is None:
                _fail(2, "give a task file (or --resume RUN)")
            llm_settings, llm_url = (None, None) if no_llm else _llm_settings(llm, llm_base_url, llm_budget, llm_every)
            options = OptimizeOptions(task_file=task_file, out=out, strategy=strategy, seed=seed,
                                      budget=40 if budget is None else budget, batch=batch, executor=executor,
                                      recording=recording, time_limit_s=time_limit, warm_start=warm_start,
                                      device=device, pins=_parse_knobs(fix), llm=llm_settings)
            run = new_run(options, _notice)
            run_dir, config, created = run.folder, run.config, True
        with _optimize_progress(config) as (on_start, on_batch):
            result = execute(run, Settings(budget_ms=budget_ms), Hooks(on_start, on_batch, _notice), device=device,
                             llm_url=llm_url)
    except (TaskError, KernelError, DirectiveError, OptimizeInputError, BaselineFailed, LLMConfigError,
            JournalError, RunFolderError) as exc:
        _discard_unstarted(run_dir, created)
        _fail(2, str(exc))
    except (ExecutorError, ToolchainError, SandboxError) as exc:
        kept = not _discard_unstarted(run_dir, created)
        hint = f" (every finished evaluation is kept: continue with --resume {run_dir})" if kept and run_dir else ""
        _fail(3, f"{exc}{hint}")
    except KeyboardInterrupt:
        if _discard_unstarted(run_dir, created):
            errors.print("interrupted before the first evaluation: nothing to keep", markup=False)
        else:
            errors.print(f"interrupted: every finished evaluation is kept; continue with --resume {run_dir}",
                         markup=False)
        raise typer.Exit(130) from None
    _show_optimize_summary(result, run_dir)


def _discard_unstarted(run_dir: Path | None, created: bool) -> bool:
    """Remove the run folder this command made if the run failed before its first evaluation (a folder
    without a journal holds nothing to resume); True if it was removed."""
    if not created or run_dir is None or (run_dir / "attempts.jsonl").exists():
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return True


def _llm_settings(model: str | None, base_url: str | None, budget: int | None,
                  every: int) -> tuple[LLMSettings | None, str | None]:
    """The LLM part of a run's settings (flags first, then environment, then the config file), and the
    endpoint to call. The settings are stored (run.json, report.md): they hold the URL without any
    credentials; the URL as given is only used, never written."""
    config = load_llm_config(model=model, base_url=base_url, token_budget=budget)
    if config is None:
        return None, None
    settings = LLMSettings(model=config.model, base_url=config.display_url, token_budget=config.token_budget,
                           every=every)
    return settings, config.base_url


def _resume_llm(config, no_llm: bool, model: str | None, base_url: str | None, budget: int | None) -> str | None:
    """The LLM flags given with --resume win over the run's own: --no-llm switches it off, --llm,
    --llm-base-url and --llm-budget replace what run.json says. Returns the endpoint to call: the run's,
    unless another is given now (credentials are never stored, so they come from the flag or the
    environment again)."""
    before = config.llm
    if no_llm or not (model or before):
        config.llm = None
        return None
    settings, url = _llm_settings(model or before.model, base_url,
                                  budget if budget is not None else (before.token_budget if before else None),
                                  before.every if before else 2)
    if base_url is None and before is not None and settings is not None and settings.base_url != before.base_url:
        settings.base_url = url = before.base_url  # the environment names another endpoint: keep the run's
    config.llm = settings
    return url


def _optimize_progress(config):
    """A live line: evaluations, best speedup, failures by class, the specialist acting."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    @contextlib.contextmanager
    def show():
        columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, transient=False) as progress:
            bar = progress.add_task(f"{config.task}: starting ({config.executor})", total=config.budget)
            base = {}

            def on_start(cfg, space, executor, strategy):
                base["llm"] = llm = getattr(strategy, "llm", None)
                if llm is not None:  # a model answer takes minutes on a small local server: say so meanwhile
                    llm.on_wait = lambda text: progress.update(bar, description=f"{cfg.task}: {text}" if text
                                                               else base.get("line", cfg.task))
                progress.update(bar, description=f"{cfg.task}: timing the baseline ({executor.name})")

            def on_batch(state, batch):
                if "ms" not in base and state.attempts[0].ms:
                    base["ms"] = state.attempts[0].ms
                best = state.best()
                speed = f"{base['ms'] / best.ms:.2f}x" if best and "ms" in base else "-"
                failures = {}
                for a in state.attempts:
                    if a.ms is None:
                        failures[a.outcome.status.value] = failures.get(a.outcome.status.value, 0) + 1
                acting = ", ".join(sorted({a.specialist for a in batch if a.specialist})) or batch[-1].note
                failed = " ".join(f"{k}:{v}" for k, v in sorted(failures.items())) or "none"
                llm = base.get("llm")
                llm_text = (f" | LLM {llm.calls} calls, {llm.client.tokens_used} tokens"
                            + ("" if llm.enabled else " (off)")) if llm else ""
                base["line"] = f"{config.task}: best {speed} | failures {failed} | acting: {acting}{llm_text}"
                progress.update(bar, completed=len(state.attempts), description=base["line"])

            yield on_start, on_batch

    return show()


def _show_optimize_summary(result, run_dir: Path) -> None:
    from rich.table import Table

    final, best = result.final, result.best
    if result.config.executor == "replay":
        console.print(f"[yellow]replayed:[/] timings come from the recorded sweep {escape(str(result.config.recording))}")
    table = Table(title=f"{result.config.task}: {len(result.state.attempts)} evaluations, {result.stopped}")
    for column in ("kernel", "median", "speedup", "roofline"):
        table.add_column(column)
    base = result.baseline
    table.add_row("baseline", f"{base.timing.median_ms:.4f} ms" if base.timing else "-", "1.00x", "")
    if final is not None and final.timing is not None:
        fraction = final.roofline.fraction if final.roofline else None
        table.add_row(escape(f"best: {best.candidate.label()}"), f"{final.timing.median_ms:.4f} ms",
                      f"{final.speedup:.2f}x" if final.speedup else "-", f"{fraction:.1%}" if fraction else "-")
        if final.library_timing:
            table.add_row("library", f"{final.library_timing.median_ms:.4f} ms",
                          f"ours {final.library_speedup:.2f}x faster" if final.library_speedup else "", "")
    console.print(table)
    failures = ", ".join(f"{k} {v}" for k, v in sorted(result.failures.items())) or "none"
    console.print(f"failures: {failures}; rules learned: {len(result.state.kb.rules)}")
    console.print(f"wrote {run_dir}/best.cu, report.md, progress.png, attempts.jsonl", markup=False)
    if final is None or final.timing is None:
        raise typer.Exit(1)


@app.command()
def bench(
    paths: Optional[List[Path]] = typer.Argument(None, help="Suite folders or task files, e.g. tasks/level1 (not needed with --resume)."),
    optimize_tasks: bool = typer.Option(False, "--optimize", help="Run `kagent optimize` on each task within --budget."),
    budget: int = typer.Option(40, min=1, max=MAX_BUDGET, help="Evaluations per task with --optimize, the baseline included."),
    kernels: Optional[Path] = typer.Option(None, help="Folder of ready-made kernels, one TASK.cu per task "
                                           "(to score kernels another system wrote)."),
    gpus: Optional[str] = typer.Option(None, help="GPU indices to spread the tasks over, e.g. 0,1 [default: every visible GPU]."),
    resume: Optional[str] = typer.Option(None, help="Continue an interrupted bench (its folder or run id): finished tasks are skipped."),
    out: Path = typer.Option(Path("results/bench"), help="Folder for benches (OUT/RUN/)."),
    executor: str = typer.Option("auto", help="gpu (measure now), replay (the recorded H200 sweeps), or auto: the GPUs if there are any."),
    strategy: str = typer.Option("agent", help="Search strategy with --optimize (agent, random, exhaustive, evolutionary)."),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="Seed of each task's search."),
    budget_ms: float = typer.Option(200.0, help="Time spent in timed launches per kernel (GPU)."),
    llm: Optional[str] = typer.Option(None, "--llm", help="Model name for --optimize [default: KAGENT_LLM_MODEL or the config file's]."),
    llm_base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible endpoint [default: OPENAI_BASE_URL]."),
    no_llm: bool = typer.Option(False, "--no-llm", help="Offline specialists only, even if an LLM is configured."),
) -> None:
    """Evaluate a suite and report what people publish: correctness, fast_p, geomean speedups.

    With neither --optimize nor --kernels, each task's kernels are evaluated as written (the fastest
    correct variant stands for the task). Tasks are spread over the GPUs, one worker each; a crashing
    or hanging kernel costs only its task. Writes OUT/RUN/ with report.md, results.json, results.csv,
    speedups.png and one file per finished task, so Ctrl-C loses nothing: --resume RUN continues.
    Without a GPU, replays the recorded H200 sweeps and says so. Exits 0 when the bench completes,
    whatever its tasks' verdicts (they are its results).
    """
    from .bench.lanes import Bench
    from .bench.options import (
        BenchConfig,
        BenchInputError,
        BenchOptions,
        bench_folder,
        find_bench,
        finished,
        new_config,
        parse_gpus,
    )
    from .optimize.executors import ExecutorError

    _check_positive(budget_ms=budget_ms)
    run_dir = bench_run = None
    llm_url = llm_base_url  # on --resume, an endpoint given again (with its credentials, never stored)
    try:
        if resume:
            run_dir = find_bench(out, resume)
            config = BenchConfig.load(run_dir)
            if gpus is not None and config.executor == "gpu":
                config.gpus = parse_gpus(gpus, gpu_count())
                config.save(run_dir)
            console.print(f"resuming {config.run_id} ({config.mode}, {config.executor})", markup=False)
        else:
            if optimize_tasks and kernels is not None:
                _fail(2, "--optimize and --kernels do different things: choose one")
            mode = "optimize" if optimize_tasks else "kernels" if kernels is not None else "as-written"
            llm_settings, llm_url = (None, None) if no_llm or mode != "optimize" else \
                _llm_settings(llm, llm_base_url, None, 2)
            options = BenchOptions(paths=[str(p) for p in paths or []], mode=mode, kernels=kernels, budget=budget,
                                   strategy=strategy, seed=seed, executor=executor, gpus=gpus, budget_ms=budget_ms,
                                   llm=llm_settings)
            config = new_config(options, notice=_notice)
            run_dir = bench_folder(out, config)
        bench_run = Bench(config, run_dir, llm_url)
        progress = _bench_progress(config, total=len(bench_run.tasks), done=len(finished(run_dir)))
        with _sigterm_as_interrupt(), progress as (on_event, on_result, notice):
            results = bench_run.run(on_event, on_result, notice)
    except (BenchInputError, TaskError, OptimizeInputError, LLMConfigError) as exc:
        _fail(2, str(exc))
    except (ExecutorError, ToolchainError, SandboxError) as exc:
        _fail(3, str(exc))
    except KeyboardInterrupt:
        if bench_run is not None:
            bench_run.write_report()
        hint = f"; continue with --resume {run_dir}" if run_dir else ""
        errors.print(f"interrupted: every finished task is kept{hint}", markup=False)
        raise typer.Exit(130) from None
    _show_bench_summary(results, run_dir)


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """A `timeout` or a batch scheduler's SIGTERM stops the command the way Ctrl-C does."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _bench_progress(config, total: int, done: int):
    """One bar for the suite; one line per GPU with its current task and how long it has run."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    class SuiteOnly(ProgressColumn):
        """A column shown on the suite's line only (a lane has no count to show)."""

        def __init__(self, column: ProgressColumn):
            super().__init__()
            self.column = column

        def render(self, task):
            return self.column.render(task) if task.total is not None else Text("")

    @contextlib.contextmanager
    def show():
        columns = (TextColumn("{task.description}", markup=False), SuiteOnly(BarColumn()), SuiteOnly(MofNCompleteColumn()),
                   TimeElapsedColumn())
        with Progress(*columns, console=console, transient=False) as progress:
            bar = progress.add_task(f"bench ({config.mode}, {config.executor})", total=total, completed=done)
            lanes, current = {}, {}

            def on_event(lane, text):
                description, task_name = f"  {lane}: {text}", text.split(" ")[0]
                if lane not in lanes:
                    lanes[lane] = progress.add_task(description, total=None)
                elif current[lane] != task_name:  # a new task: its own clock; none once the lane is done
                    progress.reset(lanes[lane], total=None, start=text != "done")
                current[lane] = task_name
                progress.update(lanes[lane], description=description)

            def on_result(result):
                speed = f", {result.speedup:.2f}x" if result.speedup else ""
                progress.console.print(f"{result.task}: {result.status.value}{speed} ({result.wall_s:.0f} s)",
                                       markup=False)
                progress.advance(bar)

            def notice(text):
                progress.console.print(f"[yellow]{escape(text)}[/]")

            yield on_event, on_result, notice

    return show()


def _show_bench_summary(results, run_dir: Path) -> None:
    from rich.table import Table

    from .bench.results import metrics

    table = Table(title=f"{len(results)} tasks")
    for column in ("task", "status", "ms", "speedup", "vs library", "roofline"):
        table.add_column(column)
    for r in results:
        table.add_row(escape(r.task) + (" (SUSPECT)" if r.suspect else ""), r.status.value,
                      f"{r.time_ms:.4f}" if r.time_ms and r.correct else "-",
                      f"{r.speedup:.2f}x" if r.speedup else "-",
                      f"{r.library_speedup:.2f}x" if r.library_speedup else "-",
                      f"{r.roofline_fraction:.1%}" if r.roofline_fraction else "-")
    console.print(table)
    m = metrics(results)
    pct = lambda v: f"{v:.1%}" if v is not None else "-"  # noqa: E731
    console.print(f"correct {pct(m.correctness)}; " + ", ".join(f"{k} {pct(v)}" for k, v in m.fast.items())
                  + (f"; geomean speedup {m.geomean_speedup:.2f}x" if m.geomean_speedup else ""))
    if m.replayed:
        console.print(f"[yellow]replayed:[/] {m.replayed} of {m.tasks} tasks' timings are recordings, not measured now")
    console.print(f"wrote {run_dir}/report.md, results.json, results.csv, speedups.png", markup=False)


@app.command("suite-table")
def suite_table(
    path: Path = typer.Argument(Path("tasks"), help="A task file or a folder of them."),
    recordings: Optional[Path] = typer.Option(None, help="Folder of recorded sweeps [default: tasks/recordings/h200]."),
    recorded: bool = typer.Option(False, "--recorded", help="Print the recorded figures instead of measuring (no GPU)."),
    device: int = typer.Option(0, help="GPU index."),
    budget_ms: float = typer.Option(400.0, help="Time spent in timed launches per kernel."),
) -> None:
    """The suite's table: baseline, best recorded variant, speedup, roofline, library function.

    One row per task with a recorded sweep: the sweep's best variant and its knobs, re-measured beside
    the baseline and the library function in one run.

    With --recorded, prints the sweeps' own figures (each candidate was timed alone; the baseline and
    the library function once, at the start of the sweep).
    """
    from rich.table import Table

    from .recording import RECORDINGS, load, tasks_with_recordings
    from .suite_table import HEADERS, row

    found = tasks_with_recordings(path, recordings or RECORDINGS)
    if not found:
        _fail(2, f"no task under {path} has a recorded sweep in {recordings or RECORDINGS}")
    if not recorded and detect_arch(device) is None:
        _fail(3, "no CUDA GPU found: use --recorded to print the recorded figures")
    title = "recorded sweeps (not re-measured)" if recorded else "measured now: best variant beside baseline and library"
    table = Table(title=title)
    for header in HEADERS:
        table.add_column(header)
    worker = None if recorded else GpuWorker(device)
    try:
        for _, task, recording in found:
            if worker is not None:
                console.print(f"measuring {task.name} ...", markup=False)
            cache = load(recording)
            if r := row(task, cache, worker, Settings(budget_ms=budget_ms)):
                table.add_row(*r.cells())
    except (KernelError, BaselineFailed) as exc:
        _fail(2, str(exc))
    except SandboxError as exc:
        _fail(3, str(exc))
    finally:
        if worker is not None:
            worker.close()
    Console(width=max(console.width, 170)).print(table)


@app.command("replay-bench")
def replay_bench(
    path: Path = typer.Argument(Path("tasks"), help="A task file or a folder of them."),
    recordings: Optional[Path] = typer.Option(None, help="Folder of recorded sweeps [default: tasks/recordings/h200]."),
    seeds: int = typer.Option(10, help="Seeds per strategy (medians are reported)."),
    warm: bool = typer.Option(True, "--warm/--no-warm", help="Also measure the agent warm-started from policies "
                                                            "trained on the other tasks of the same family."),
) -> None:
    """Compare search strategies on recorded H200 sweeps (no GPU needed).

    Per task: evaluations until the best is within 5% of the sweep's best (median over seeds) for the
    agent, the evolutionary baseline and random search, against 30% of the sweep's size; the median
    best speedup after 25 evaluations; and the agent warm-started from its family's policies.
    """
    import statistics

    from .bench.strategies import EARLY, SHARE_OF_SWEEP, bench_task
    from .optimize.executors import ExecutorError, ReplayExecutor
    from .optimize.space import Space
    from .recording import RECORDINGS, tasks_with_recordings

    folder = recordings or RECORDINGS
    usable: dict[str, tuple[Path, Path, str]] = {}
    for file, task, recording in tasks_with_recordings(path, folder):
        try:
            ReplayExecutor(task, Space.of_task(task, generic=False), recording)
        except ExecutorError as exc:
            console.print(f"[yellow]skipped {task.name}:[/] {escape(str(exc))}")
            continue
        usable[task.name] = (file, recording, task.family or task.name)
    if not usable:
        _fail(2, f"no task under {path} has a complete recorded sweep in {folder}")
    from rich.table import Table

    table = Table(title=f"replayed H200 sweeps, median over {seeds} seeds (evaluations include the baseline)")
    for column in ("task", "sweep", f"{SHARE_OF_SWEEP:.0%}", "to 95%: agent", "evo", "random", "agent warm",
                   "to best: agent", "evo", "random", "agent warm", f"best at {EARLY}: agent", "evo", "random",
                   "bars"):
        table.add_column(column)
    passed = 0
    for name, (file, recording, family) in usable.items():
        family_files = [(f, r) for n, (f, r, fam) in usable.items() if fam == family and n != name] if warm else None
        row = bench_task(file, recording, seeds, family_files=family_files)
        ok = row.agent_fast_enough and row.agent_beats_random_early
        passed += ok
        warm_text = f"{statistics.median(row.warm_to_target):g}" if row.warm_to_target else "-"
        warm_best = f"{statistics.median(row.warm_to_best):g}" if row.warm_to_best else "-"
        table.add_row(name, str(row.sweep_size), f"{SHARE_OF_SWEEP * row.sweep_size:.1f}",
                      *(f"{row.median_to_target(s):g}" for s in ("agent", "evolutionary", "random")), warm_text,
                      *(f"{row.median_to_best(s):g}" for s in ("agent", "evolutionary", "random")), warm_best,
                      *(f"{row.median_early(s):.3f}x" for s in ("agent", "evolutionary", "random")),
                      "[green]pass[/]" if ok else "[red]FAIL[/]")
    Console(width=max(console.width, 190)).print(table)
    console.print(f"{passed} of {len(usable)} tasks meet both bars (agent within {SHARE_OF_SWEEP:.0%} of the sweep's "
                  f"evaluations; agent's best at {EARLY} above random's, or both at the sweep's best)")


def main() -> None:
    app()
