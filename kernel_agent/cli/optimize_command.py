"""`kagent optimize`: the search for the fastest correct kernel of a task, resumable, with or without a model."""

from __future__ import annotations

import shutil
from pathlib import Path

import typer

from sandbox import (
    BaselineFailed,
    DirectiveError,
    KernelError,
    SandboxError,
    Settings,
    ToolchainError,
)

from ..llm.settings import LLMConfigError, is_small_model, load_llm_config
from ..optimize.executors import SEARCH_PRECISION, ExecutorError
from ..optimize.first_kernel import FirstKernelError
from ..optimize.run_config import LLMSettings, RunConfig, RunFolderError
from ..optimize.session import (
    Hooks,
    OptimizeInputError,
    OptimizeOptions,
    execute,
    new_run,
    resume_run,
)
from ..optimize.store import JournalError
from ..render import console, errors
from ..render.progress import run_progress
from ..render.tables import show_run
from ..task import TaskError
from .app import (
    MAX_BATCH,
    MAX_BUDGET,
    MAX_SEED,
    app,
    check_positive,
    fail,
    knob_pairs,
    notice,
)


@app.command()
def optimize(
    task_file: Path | None = typer.Argument(None,
                                            help="Task YAML, e.g. tasks/level1/layernorm.yaml "
                                                 "(not needed with --resume)."),
    budget: int | None = typer.Option(None, min=1, max=MAX_BUDGET,
                                         help="Evaluations to spend, the baseline included [default: 40]."),
    time_limit: float | None = typer.Option(None, "--time-limit",
                                            help="Stop after this many seconds (then finish the report)."),
    strategy: str = typer.Option("agent", help="agent (planner + specialists), random, exhaustive or evolutionary."),
    seed: int = typer.Option(0, min=0, max=MAX_SEED,
                             help="Seed of the search (a replayed run is deterministic for a seed) and of the "
                                  "model's sampling (another seed asks for other samples)."),
    batch: int = typer.Option(4, min=1, max=MAX_BATCH, help="Candidates proposed and ranked together."),
    executor: str = typer.Option("auto",
                                 help="gpu (measure now), replay (a recorded sweep), compile-only "
                                      "(build and plan every kernel, run none), or auto: the GPU if there "
                                      "is one, else the recording if there is one, else compile-only."),
    recording: Path | None = typer.Option(None,
                                          help="Recorded sweep to replay [default: tasks/recordings/h200/TASK.json]."),
    emulate: bool = typer.Option(False, "--emulate",
                                 help="A compile-only run (--executor auto picks it) that also runs each kernel "
                                      "that builds on the CPU emulator at the sizes small enough for it, so wrong "
                                      "results, out-of-bounds writes, crashes, hangs and races are found (and "
                                      "repaired) without a GPU. Nothing is timed: `kagent measure RUN` still does "
                                      "that on a GPU."),
    fix: list[str] = typer.Option([], "--fix", help="Pin a knob, NAME=VALUE (repeatable)."),
    kernel: list[Path] = typer.Option([], "--kernel",
                                      help="A kernel file to search from beside the task's own (repeatable), e.g. "
                                           "one fixed in `kagent repair`; the run keeps a copy."),
    resume: str | None = typer.Option(None, help="Continue an interrupted run: its folder or run id."),
    out: Path = typer.Option(Path("results"),
                             help="Folder for runs (OUT/TASK/RUN/), the attempt store and learned policies."),
    warm_start: bool = typer.Option(True, "--warm-start/--no-warm-start",
                                    help="Start from the policies and failure rules learned by earlier runs."),
    device: int = typer.Option(0, help="GPU index."),
    budget_ms: float = typer.Option(200.0, help="Time spent in timed launches per candidate (GPU), at most."),
    precision: float = typer.Option(SEARCH_PRECISION, min=0.0, max=0.5,
                                    help="Stop timing a searched candidate once its median is known to within "
                                         "this fraction (95% interval); 0 spends the whole --budget-ms on each. "
                                         "The baseline and the final side-by-side run always spend it all."),
    llm: str | None = typer.Option(None, "--llm", help="Model name: an LLM writes and repairs kernels "
                                      "[default: KAGENT_LLM_MODEL or the config file's, if any]."),
    llm_base_url: str | None = typer.Option(None, help="OpenAI-compatible endpoint [default: OPENAI_BASE_URL]."),
    llm_budget: int | None = typer.Option(None, min=0, max=MAX_SEED,
                                             help="Tokens (prompt + completion) the LLM may spend in this run."),
    llm_every: int = typer.Option(2, min=1,
                                  help="Ask the LLM for a new kernel every N batches (and whenever stalled)."),
    llm_timeout: float | None = typer.Option(None, min=1.0,
                                             help="Seconds one answer may take [default: the config file's "
                                                  "timeout_s, else 120, or 600 for a server on this machine]."),
    llm_small: bool | None = typer.Option(None, "--llm-small/--llm-large",
                                          help="Prompts for a small model (whole-file answers, knobs optional, "
                                               "one answer format; failed ports sampled afresh, not repaired) "
                                               "or for a large one [default: small when the "
                                               "model's name says <= 8B parameters, or, saying nothing, when it "
                                               "is served on this machine]."),
    llm_port: bool = typer.Option(True, "--llm-port/--no-llm-port",
                                  help="While no kernel is 1.5x the baseline, have the model fill the slots of the "
                                       "skeletons that fit the task (`kagent skeletons TASK`) before it writes whole "
                                       "kernels."),
    llm_grammar: str | None = typer.Option(None, "--llm-grammar",
                                           help="The server decodes under kagent's answer grammars (slot blocks "
                                                "only, one ```cuda block): llama.cpp (its `grammar` field), vllm "
                                                "(`guided_grammar`) or off [default: the config file's grammar, "
                                                "else off]. A small model then cannot answer in prose."),
    no_llm: bool = typer.Option(False, "--no-llm", help="Offline specialists only, even if an LLM is configured."),
) -> None:
    """Search a task's kernels, knobs and generic edits for the fastest correct kernel.

    A planner picks which specialist (launch, memory, compute, reduction) acts on which parent; the
    specialists learn from rank rewards; failures become rules that prune later proposals. Writes
    OUT/TASK/RUN/ with best.cu, report.md, progress.png and attempts.jsonl. Without a GPU, replays the
    task's recorded H200 sweep and says so. Ctrl-C loses nothing: --resume RUN continues. With an LLM
    (--llm or KAGENT_LLM_MODEL), it also writes and repairs kernels; see the README.
    """
    check_positive(time_limit=time_limit, budget_ms=budget_ms)
    run_dir, created = None, False
    try:
        if resume:
            if kernel:
                fail(2, "--kernel starts a new run; a resumed run keeps the kernels it started with")
            run = resume_run(out, resume)
            run_dir, config = run.folder, run.config
            llm_url = _resumed(config, budget, time_limit, no_llm, llm, llm_base_url, llm_budget, llm_timeout,
                               llm_grammar)
        else:
            if task_file is None:
                fail(2, "give a task file (or --resume RUN)")
            llm_settings, llm_url = (None, None) if no_llm else \
                llm_settings_from(llm, llm_base_url, llm_budget, llm_every, llm_timeout, llm_small, llm_port,
                                  llm_grammar)
            options = OptimizeOptions(task_file=task_file, out=out, strategy=strategy, seed=seed,
                                      budget=40 if budget is None else budget, batch=batch, executor=executor,
                                      emulate=emulate, recording=recording, time_limit_s=time_limit,
                                      warm_start=warm_start, device=device, pins=knob_pairs(fix), llm=llm_settings,
                                      kernels=kernel)
            run = new_run(options, notice)
            run_dir, config, created = run.folder, run.config, True
        with run_progress(console, config.task, config.executor, config.budget) as line:
            hooks = Hooks(on_start=line.on_start, on_batch=line.on_batch, on_wait=line.on_wait, notice=notice)
            settings = Settings(budget_ms=budget_ms, precision=precision)
            result = execute(run, settings, hooks, device=device, llm_url=llm_url)
    except (TaskError, KernelError, DirectiveError, OptimizeInputError, BaselineFailed, LLMConfigError,
            JournalError, RunFolderError) as exc:
        _discard_unstarted(run_dir, created)
        fail(2, str(exc))
    except FirstKernelError as exc:  # the run folder keeps the first kernel's session: a resume goes on from it
        fail(1, f"{exc}; continue with --resume {run_dir}")
    except (ExecutorError, ToolchainError, SandboxError) as exc:
        kept = not _discard_unstarted(run_dir, created)
        hint = f" (every finished evaluation is kept: continue with --resume {run_dir})" if kept and run_dir else ""
        fail(3, f"{exc}{hint}")
    except KeyboardInterrupt:
        if _discard_unstarted(run_dir, created):
            errors.print("interrupted before the first evaluation: nothing to keep", markup=False)
        else:
            errors.print(f"interrupted: every finished evaluation is kept; continue with --resume {run_dir}",
                         markup=False)
        raise typer.Exit(130) from None
    show_run(console, result, run_dir)
    if config.executor != "compile-only" and (result.final is None or result.final.timing is None):
        raise typer.Exit(1)  # nothing correct was found (a compile-only run measures nothing by design)


def _resumed(config: RunConfig, budget: int | None, time_limit: float | None, no_llm: bool, llm: str | None,
             llm_base_url: str | None, llm_budget: int | None, llm_timeout: float | None,
             llm_grammar: str | None = None) -> str | None:
    """What --resume may change: the budget, the time limit and the model; the endpoint to call."""
    if budget is not None:
        config.budget = budget
    if time_limit is not None:
        config.time_limit_s = time_limit
    llm_url = _resume_llm(config, no_llm, llm, llm_base_url, llm_budget, llm_timeout, llm_grammar)
    console.print(f"resuming {config.run_id} ({config.task}, {config.strategy}, {config.executor})", markup=False)
    return llm_url


def _discard_unstarted(run_dir: Path | None, created: bool) -> bool:
    """Remove the run folder this command made if the run failed before its first evaluation (a folder
    without a journal holds nothing to resume); True if it was removed."""
    if not created or run_dir is None or (run_dir / "attempts.jsonl").exists():
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return True


def llm_settings_from(model: str | None, base_url: str | None, budget: int | None, every: int,
                      timeout_s: float | None = None, small: bool | None = None,
                      port: bool = True, grammar: str | None = None) -> tuple[LLMSettings | None, str | None]:
    """The LLM part of a run's settings (flags first, then environment, then the config file), and the
    endpoint to call. The settings are stored (run.json, report.md): they hold the URL without any
    credentials; the URL as given is only used, never written. `small` None: decided by the model."""
    config = load_llm_config(model=model, base_url=base_url, token_budget=budget, timeout_s=timeout_s,
                             grammar=grammar)
    if config is None:
        return None, None
    settings = LLMSettings(model=config.model, base_url=config.display_url, token_budget=config.token_budget,
                           every=every, timeout_s=timeout_s, port=port, grammar=config.grammar,
                           small=is_small_model(config.model, config.base_url) if small is None else small)
    return settings, config.base_url


def _resume_llm(config: RunConfig, no_llm: bool, model: str | None, base_url: str | None,
                budget: int | None, timeout_s: float | None, grammar: str | None = None) -> str | None:
    """The LLM flags given with --resume win over the run's own: --no-llm switches it off, --llm,
    --llm-base-url and --llm-budget replace what run.json says. Returns the endpoint to call: the run's,
    unless another is given now (credentials are never stored, so they come from the flag or the
    environment again)."""
    before = config.llm
    chosen = model or (before.model if before else None)
    if no_llm or chosen is None:
        config.llm = None
        return None
    settings, url = llm_settings_from(chosen, base_url,
                                      budget if budget is not None else (before.token_budget if before else None),
                                      before.every if before else 2,
                                      timeout_s if timeout_s is not None else (before.timeout_s if before else None),
                                      before.small if before and model in (None, before.model) else None,
                                      before.port if before else True,
                                      grammar or (before.grammar if before else None))
    if base_url is None and before is not None and settings is not None and settings.base_url != before.base_url:
        settings.base_url = url = before.base_url  # the environment names another endpoint: keep the run's
    config.llm = settings
    return url
