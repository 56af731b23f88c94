"""`kagent bench` (a suite over the GPUs, with KernelBench-style metrics), `kagent suite-table` and
`kagent replay-bench` (the search strategies compared on recorded sweeps)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from sandbox import (
    BaselineFailed,
    GpuWorker,
    KernelError,
    SandboxError,
    Settings,
    ToolchainError,
    detect_arch,
    gpu_count,
)

from ..bench.lanes import Bench
from ..bench.options import (
    BenchConfig,
    BenchInputError,
    BenchOptions,
    bench_folder,
    find_bench,
    finished,
    new_config,
    parse_gpus,
)
from ..bench.strategies import EARLY, SHARE_OF_SWEEP, bench_task
from ..llm.settings import LLMConfigError
from ..optimize.executors import ExecutorError, ReplayExecutor
from ..optimize.session import OptimizeInputError
from ..optimize.space import Space
from ..recording import RECORDINGS, load, tasks_with_recordings
from ..render import console, errors
from ..render.progress import bench_progress
from ..render.tables import replay_table, show_bench, suite_table
from ..suite_table import HEADERS, row
from ..task import TaskError
from .app import (
    MAX_BUDGET,
    MAX_SEED,
    app,
    check_positive,
    fail,
    notice,
    sigterm_as_interrupt,
)
from .optimize_command import llm_settings_from
from .replay_caches import kernel_tuner_choice, replay_caches


@app.command()
def bench(
    paths: list[Path] | None = typer.Argument(None,
                                              help="Suite folders or task files, e.g. tasks/level1 "
                                                   "(not needed with --resume)."),
    optimize_tasks: bool = typer.Option(False, "--optimize",
                                        help="Run `kagent optimize` on each task within --budget."),
    budget: int = typer.Option(40, min=1, max=MAX_BUDGET,
                               help="Evaluations per task with --optimize, the baseline included."),
    kernels: Path | None = typer.Option(None, help="Folder of ready-made kernels, one TASK.cu per task "
                                           "(to score kernels another system wrote)."),
    gpus: str | None = typer.Option(None,
                                    help="GPU indices to spread the tasks over, e.g. 0,1 "
                                         "[default: every visible GPU]."),
    resume: str | None = typer.Option(None,
                                      help="Continue an interrupted bench (its folder or run id): "
                                           "finished tasks are skipped."),
    out: Path = typer.Option(Path("results/bench"), help="Folder for benches (OUT/RUN/)."),
    executor: str = typer.Option("auto",
                                 help="gpu (measure now), replay (the recorded H200 sweeps), "
                                      "or auto: the GPUs if there are any."),
    strategy: str = typer.Option("agent",
                                 help="Search strategy with --optimize (agent, random, exhaustive, evolutionary)."),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="Seed of each task's search."),
    budget_ms: float = typer.Option(200.0, help="Time spent in timed launches per kernel (GPU)."),
    llm: str | None = typer.Option(None, "--llm",
                                   help="Model name for --optimize [default: KAGENT_LLM_MODEL or the config file's]."),
    llm_base_url: str | None = typer.Option(None, help="OpenAI-compatible endpoint [default: OPENAI_BASE_URL]."),
    no_llm: bool = typer.Option(False, "--no-llm", help="Offline specialists only, even if an LLM is configured."),
    ray: str | None = typer.Option(None, "--ray", metavar="ADDRESS",
                                   help="Spread the tasks over a Ray cluster, one GPU each: `auto` (the cluster "
                                        "`ray start` made here, or RAY_ADDRESS), `local` (a Ray instance of this "
                                        "machine's own), or the head's HOST:PORT. Needs `pip install 'kagent[ray]'`."),
) -> None:
    """Evaluate a suite and report what people publish: correctness, fast_p, geomean speedups.

    With neither --optimize nor --kernels, each task's kernels are evaluated as written (the fastest
    correct variant stands for the task). Tasks are spread over the GPUs, one worker each; a crashing
    or hanging kernel costs only its task. Writes OUT/RUN/ with report.md, results.json, results.csv,
    speedups.png and one file per finished task, so Ctrl-C loses nothing: --resume RUN continues.
    Without a GPU, replays the recorded H200 sweeps and says so. Exits 0 when the bench completes,
    whatever its tasks' verdicts (they are its results).

    With --ray ADDRESS, each task is a Ray task asking for one GPU on a cluster (with --executor auto, the
    cluster's GPUs; --executor replay replays the recordings on its nodes). A task lost to the cluster is
    tried twice more, then reported as an infrastructure error that --resume runs again.
    """
    from ..bench.ray_bench import RayBench

    check_positive(budget_ms=budget_ms)
    run_dir = bench_run = None
    llm_url = llm_base_url  # on --resume, an endpoint given again (with its credentials, never stored)
    try:
        if resume:
            run_dir = find_bench(out, resume)
            config = BenchConfig.load(run_dir)
            if ray is not None and gpus is not None:
                fail(2, "--gpus picks this machine's GPUs; with --ray the cluster gives each task a free GPU")
            if ray is None and config.executor == "gpu" and (gpus is not None or not config.gpus):
                config.gpus = parse_gpus(gpus, gpu_count())  # a bench begun on a cluster resumed on lanes
                if not config.gpus:
                    raise ExecutorError("this bench measures on GPUs and none is visible here: resume it with "
                                        "--ray ADDRESS, or on a machine with a GPU")
                config.save(run_dir)
            console.print(f"resuming {config.run_id} ({config.mode}, {config.executor})", markup=False)
        else:
            if optimize_tasks and kernels is not None:
                fail(2, "--optimize and --kernels do different things: choose one")
            mode = "optimize" if optimize_tasks else "kernels" if kernels is not None else "as-written"
            llm_settings, llm_url = (None, None) if no_llm or mode != "optimize" else \
                llm_settings_from(llm, llm_base_url, None, 2)
            options = BenchOptions(paths=[str(p) for p in paths or []], mode=mode, kernels=kernels, budget=budget,
                                   strategy=strategy, seed=seed, executor=executor, gpus=gpus, budget_ms=budget_ms,
                                   llm=llm_settings, cluster=ray is not None)
            config = new_config(options, notice=notice)
            run_dir = bench_folder(out, config)
        bench_run = Bench(config, run_dir, llm_url) if ray is None else RayBench(config, run_dir, llm_url, ray)
        where = "" if ray is None else f", ray {ray}"
        progress = bench_progress(console, f"bench ({config.mode}, {config.executor}{where})",
                                  total=len(bench_run.tasks), done=len(finished(run_dir)))
        with sigterm_as_interrupt(), progress as lines:
            results = bench_run.run(lines.on_event, lines.on_result, lines.notice)
    except (BenchInputError, TaskError, OptimizeInputError, LLMConfigError) as exc:
        fail(2, str(exc))
    except (ExecutorError, ToolchainError, SandboxError) as exc:
        fail(3, str(exc))
    except KeyboardInterrupt:
        if bench_run is not None:
            bench_run.write_report()
        hint = f"; continue with --resume {run_dir}" if run_dir else ""
        errors.print(f"interrupted: every finished task is kept{hint}", markup=False)
        raise typer.Exit(130) from None
    show_bench(console, results, run_dir)


@app.command("suite-table")
def suite_table_command(
    path: Path = typer.Argument(Path("tasks"), help="A task file or a folder of them."),
    recordings: Path | None = typer.Option(None, help="Folder of recorded sweeps [default: tasks/recordings/h200]."),
    recorded: bool = typer.Option(False, "--recorded",
                                  help="Print the recorded figures instead of measuring (no GPU)."),
    device: int = typer.Option(0, help="GPU index."),
    budget_ms: float = typer.Option(400.0, help="Time spent in timed launches per kernel."),
) -> None:
    """The suite's table: baseline, best recorded variant, speedup, roofline, library function.

    One row per task with a recorded sweep: the sweep's best variant and its knobs, re-measured beside
    the baseline and the library function in one run.

    With --recorded, prints the sweeps' own figures (each candidate was timed alone; the baseline and
    the library function once, at the start of the sweep).
    """
    found = tasks_with_recordings(path, recordings or RECORDINGS)
    if not found:
        fail(2, f"no task under {path} has a recorded sweep in {recordings or RECORDINGS}")
    if not recorded and detect_arch(device) is None:
        fail(3, "no CUDA GPU found: use --recorded to print the recorded figures")
    title = "recorded sweeps (not re-measured)" if recorded \
        else "measured now: best variant beside baseline and library"
    rows = []
    worker = None if recorded else GpuWorker(device)
    try:
        for _, task, recording in found:
            if worker is not None:
                console.print(f"measuring {task.name} ...", markup=False)
            cache = load(recording)
            if r := row(task, cache, worker, Settings(budget_ms=budget_ms)):
                rows.append(r.cells())
    except (KernelError, BaselineFailed) as exc:
        fail(2, str(exc))
    except SandboxError as exc:
        fail(3, str(exc))
    finally:
        if worker is not None:
            worker.close()
    Console(width=max(console.width, 170), emoji=False).print(suite_table(title, HEADERS, rows))


@app.command("replay-bench")
def replay_bench_command(
    path: Path = typer.Argument(Path("tasks"), help="A task file or a folder of them."),
    recordings: Path | None = typer.Option(None, help="Folder of recorded sweeps [default: tasks/recordings/h200]."),
    seeds: int | None = typer.Option(None, help="Seeds per strategy (medians are reported) [default: 10; 20 with "
                                                "--cache]."),
    warm: bool = typer.Option(True, "--warm/--no-warm", help="Also measure the agent warm-started from policies "
                                                            "trained on the other tasks of the same family."),
    cache: list[Path] | None = typer.Option(None, "--cache", help="A kernel_tuner cache file (.json or .json.gz) "
                                            "to search instead of the tasks' sweeps; repeat for several."),
    budget: int = typer.Option(200, help="With --cache: evaluations per run."),
    kernel_tuner: str = typer.Option("all", "--kernel-tuner", help="With --cache: kernel_tuner's strategies run "
                                     "beside kagent's: all, none, or names joined by commas."),
    out: Path = typer.Option(Path("results/replay-bench"), help="With --cache: where report.md, shares.png and "
                                                                 "side_by_side.json go."),
) -> None:
    """Compare search strategies on recorded H200 sweeps, or on other tuners' caches (no GPU needed).

    Per task: evaluations until the best is within 5% of the sweep's best (median over seeds) for the
    agent, the evolutionary baseline and random search, against 30% of the sweep's size; the median
    best speedup after 25 evaluations; and the agent warm-started from its family's policies.

    With --cache: kagent's strategies (the agent with and without its predictor, evolutionary, random)
    and kernel_tuner's (its simulation mode, in this process) search each cache's recorded
    configurations, failures included. Reported per strategy: the share of the optimum after 20, 50,
    100 and 200 evaluations and the evaluations until within 5% of it (median and quartiles), as a
    table, report.md and shares.png.
    """
    check_positive(seeds=seeds, budget=budget)
    if cache:
        replay_caches(cache, seeds or 20, budget, kernel_tuner_choice(kernel_tuner), out)
        return
    seeds = seeds or 10
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
        fail(2, f"no task under {path} has a complete recorded sweep in {folder}")
    rows = []
    for name, (file, recording, family) in usable.items():
        family_files = [(f, r) for n, (f, r, fam) in usable.items() if fam == family and n != name] if warm else None
        rows.append((name, bench_task(file, recording, seeds, family_files=family_files)))
    passed = sum(row.agent_fast_enough and row.agent_beats_random_early for _, row in rows)
    Console(width=max(console.width, 190), emoji=False).print(replay_table(seeds, rows, SHARE_OF_SWEEP, EARLY))
    console.print(f"{passed} of {len(usable)} tasks meet both bars (agent within {SHARE_OF_SWEEP:.0%} of the sweep's "
                  f"evaluations; agent's best at {EARLY} above random's, or both at the sweep's best)")
