"""Set up an optimise run from the user's options (or resume one), then run it: the task is loaded once
and handed along; the executor, strategy, policies, model and store are made here."""

from __future__ import annotations

import copy
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from sandbox import (
    DirectiveError,
    GpuWorker,
    KernelError,
    Settings,
    detect_arch,
    emulator_unavailable,
    load_kernel,
    target_arch,
)

from ..files import new_folder
from ..recording import recording_path
from ..repair.checks import SharedGpu
from ..seams import Attempt, Executor, Proposer, SearchState
from ..skeletons import fitting
from ..skeletons.winners import FOLDER as WINNERS_FOLDER
from ..task import Task, load_task
from .executors import SEARCH_SETTINGS, CompileOnlyExecutor, ExecutorError, GpuExecutor, ReplayExecutor
from .loop import RunResult, search
from .policy import PolicyBook, PolicyError
from .run_config import LLMSettings, RunConfig
from .run_report import write_outputs
from .space import Space
from .store import Store
from .strategies import STRATEGIES, make_strategy

if TYPE_CHECKING:
    from ..llm.client import LLMClient

EXECUTORS = ("auto", "gpu", "replay", "compile-only")


GIVEN = "given"  # the run folder's copies of the --kernel files
START = f"{GIVEN}/start.cu"  # a task without a starting kernel: the run's start (stands as its baseline)
FIRST_KERNEL_ROUNDS = 3  # repair rounds for the model's first kernel


class OptimizeInputError(ValueError):
    """Bad user input: the message says what to change (exit code 2)."""


class OptimizeOptions(BaseModel):
    """What a user chooses for a new run (`kagent optimize`'s options)."""

    task_file: Path
    out: Path = Path("results")
    strategy: str = "agent"
    seed: int = Field(0, ge=0)
    budget: int = Field(40, ge=1, description="evaluations, the baseline included")
    batch: int = Field(4, ge=1)
    executor: str = "auto"
    emulate: bool = Field(False, description="with the compile-only executor: run kernels on the CPU emulator")
    recording: Path | None = None
    time_limit_s: float | None = Field(None, gt=0)
    warm_start: bool = True
    device: int = 0
    pins: dict[str, str] = Field(default_factory=dict)
    llm: LLMSettings | None = None
    kernels: list[Path] = Field(default_factory=list, description="kernel files to start from beside the task's")


@dataclass
class Run:
    """A run ready to go or to resume: its settings, its folder, the results folder, its task."""

    config: RunConfig
    folder: Path
    out: Path
    task: Task


@dataclass
class Hooks:
    """What a run tells its caller: when it starts (its executor and model), after each batch, while it
    waits for a model's answer, and notices along the way."""

    on_start: Callable[[Executor, Proposer | None], None] | None = None
    on_batch: Callable[[SearchState, list[Attempt]], None] | None = None
    on_wait: Callable[[str | None], None] | None = None
    notice: Callable[[str], None] = print


def check_strategy(strategy: str, llm: LLMSettings | None) -> None:
    if strategy not in STRATEGIES:
        raise OptimizeInputError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if llm is not None and strategy != "agent":
        raise OptimizeInputError(f"--llm drives the agent's planner and specialists: use --strategy agent, "
                                 f"not {strategy}")


def new_run(options: OptimizeOptions, notice: Callable[[str], None] = print) -> Run:
    """Check the options, pick the executor, and make the run's folder (OUT/TASK/RUN)."""
    if options.executor not in EXECUTORS:
        raise OptimizeInputError(f"--executor must be one of {', '.join(EXECUTORS)}, got {options.executor!r}")
    check_strategy(options.strategy, options.llm)
    task = load_task(options.task_file)
    starts = task.baseline is None and bool(options.kernels)  # the first --kernel is the run's start
    if task.baseline is None and not options.kernels and options.llm is None:
        raise OptimizeInputError(f"task {task.name} has no starting kernel: a model writes the first one "
                                 "(--llm MODEL ...), or give one with --kernel FILE")
    if options.executor == "auto":  # --emulate asks for a compile-only run: the emulator is its executor's
        executor = "compile-only" if options.emulate else _auto_executor(task, options, notice)
    else:
        executor = options.executor
    if executor == "gpu" and detect_arch(options.device) is None:
        raise ExecutorError("--executor gpu: no CUDA GPU found on this machine (try --executor replay or "
                            "compile-only)")
    if options.emulate and executor != "compile-only":
        raise OptimizeInputError(f"--emulate runs kernels on the CPU emulator in a compile-only run; this run's "
                                 f"executor is {executor} (add --executor compile-only)")
    if options.emulate and (reason := emulator_unavailable()):
        raise ExecutorError(f"--emulate: {reason}")
    rec = recording_path(task.name, options.recording) if executor == "replay" else None
    if rec is not None and not rec.exists():
        raise ExecutorError(f"no recorded sweep for task {task.name} at {rec}: record one on a GPU with "
                            f"`kagent sweep {options.task_file} --out {rec}`, or pass --recording FILE")
    config = RunConfig(
        run_id=f"{options.strategy}-s{options.seed}-{time.strftime('%Y%m%d-%H%M%S')}",
        task_file=str(options.task_file), task=task.name, family=task.family or task.name,
        arch="sm_90" if executor == "replay" else target_arch(), strategy=options.strategy, seed=options.seed,
        budget=options.budget, batch=options.batch, executor=executor, emulate=options.emulate,
        recording=str(rec) if rec else None, time_limit_s=options.time_limit_s, warm_start=options.warm_start,
        generic=executor == "gpu", pins=dict(options.pins), llm=options.llm,
        given=_given_labels(task, options.kernels[starts:]),
        start=START if starts else None)
    for path in options.kernels:
        try:
            load_kernel(path, include_roots=task.kernel_folders())  # as the run will: a copy, beside nothing
        except (KernelError, DirectiveError) as exc:
            raise OptimizeInputError(f"--kernel {path}: {exc}") from None
    try:
        folder = new_folder(options.out / config.task, config.run_id)
        if options.kernels:
            (folder / GIVEN).mkdir()
    except OSError as exc:
        raise OptimizeInputError(f"--out {options.out}: cannot write there ({exc.strerror or exc})") from None
    if starts:
        shutil.copyfile(options.kernels[0], folder / START)
    for label, path in zip(config.given, options.kernels[starts:]):
        shutil.copyfile(path, folder / GIVEN / f"{label}.cu")
    config.run_id = folder.name
    return Run(config, folder, options.out, starting(task, config, folder))


def starting(task: Task, config: RunConfig, folder: Path) -> Task:
    """The task as the run sees it: a task without a starting kernel gets the run's start as its baseline."""
    if task.baseline is not None or config.start is None:
        return task
    return task.model_copy(update={"baseline": str((folder / config.start).resolve())})


def _given_labels(task: Task, kernels: list[Path]) -> list[str]:
    """A label for each --kernel file: `given_` and its name (made an identifier), unique in the run."""
    taken = set(task.kernel_paths())
    labels = []
    for path in kernels:
        base = "given_" + (re.sub(r"\W", "_", path.stem) or "kernel")
        label, n = base, 2
        while label in taken:
            label, n = f"{base}{n}", n + 1
        taken.add(label)
        labels.append(label)
    return labels


def run_space(run: Run) -> Space:
    """The run's kernels: the task's, and those given with --kernel (copied into the run folder's given/),
    with the run's pinned knobs."""
    space = Space.of_task(run.task, generic=run.config.generic)
    for label in run.config.given:
        space.add_kernel(label, run.folder / GIVEN / f"{label}.cu", run.config.generic)
    pin_knobs(space, run.config.pins)
    return space


def _auto_executor(task: Task, options: OptimizeOptions, notice: Callable[[str], None]) -> str:
    """The GPU if there is one; else the task's recorded sweep; else compiling only."""
    if detect_arch(options.device) is not None:
        return "gpu"
    if recording_path(task.name, options.recording).exists():
        notice(f"no CUDA GPU found: replaying the recorded H200 sweep of {task.name} "
               "(timings are recordings, not measurements of this run); --executor gpu needs a GPU")
        return "replay"
    notice(f"no CUDA GPU found and no recorded sweep of {task.name}: kernels are compiled and their launches "
           "planned, not run (compile-only); measure them on a GPU later with `kagent measure RUN`")
    return "compile-only"


def resume_run(out: Path, resume: str, given_as: str = "--resume") -> Run:
    """A run folder given as a path, or as a run id under OUT/<task>/, with its settings and task."""
    for folder in [Path(resume), *sorted(out.glob(f"*/{resume}"))]:
        if (folder / "run.json").is_file():
            config = RunConfig.load(folder)
            return Run(config, folder, out, starting(load_task(config.task_file), config, folder))
    raise OptimizeInputError(f"{given_as} {resume}: no run folder with a run.json "
                             f"(looked at {resume} and {out}/*/{resume})")


def pin_knobs(space: Space, pins: dict[str, str]) -> None:
    """Fix knobs to one value in every kernel that has them (`--fix NAME=VALUE`)."""
    for name, value in pins.items():
        owners = [ks for ks in space.kernels.values() if name in ks.knobs]
        if not owners:
            known = sorted({k for ks in space.kernels.values() for k in ks.knobs})
            raise OptimizeInputError(f"--fix {name}={value}: no kernel of the task has a knob {name} "
                                     f"(knobs: {', '.join(known)})")
        for ks in owners:
            knob = ks.knobs[name]
            if value not in knob.values:
                raise OptimizeInputError(f"--fix {name}={value}: not one of its values ({' '.join(knob.values)})")
            ks.knobs[name] = knob.model_copy(update={"values": [value]})


def execute(run: Run, settings: Settings | None = None, hooks: Hooks | None = None,
            worker: GpuWorker | None = None, device: int = 0, llm_url: str | None = None) -> RunResult:
    """Run (or resume) the search; on a GPU, in `worker` if given (left open), else in a new one on
    `device`. `llm_url`: the model's endpoint as given (with any credentials; run.json has none)."""
    config, hooks = run.config, hooks or Hooks()
    if config.measured_on:  # its journal holds GPU verdicts now: more compile-only attempts would mix with them
        raise OptimizeInputError(f"run {config.run_id} was measured on {config.measured_on} with `kagent measure`: "
                                 "its search cannot go on; start a new run")
    if run.task.baseline is None:
        _write_start(run, hooks.notice, llm_url, worker, device)
    space = run_space(run)
    config.save(run.folder)
    policy_path = PolicyBook.path(run.out / "policies", config.arch, config.family)
    policies = _warm_start_policies(config, policy_path, run.folder, hooks.notice)
    start = copy.deepcopy(policies)
    llm = _llm_proposer(run, space, hooks.notice, llm_url)
    if llm is not None:
        llm.on_wait = hooks.on_wait
    ports = [s.name for s in fitting(run.task)] if config.strategy == "agent" else []
    if config.llm is not None and not config.llm.port:
        ports = []
    elif llm is None and ports and not run.task.variants:
        tried = "the naive kernel's" + (f" and the given kernels' ({', '.join(config.given)})" if config.given else "")
        hooks.notice(f"{run.task.name} has only its naive kernel: porting a skeleton that fits it ({', '.join(ports)}) "
                     f"needs a model (--llm); without one only {tried} knobs and generic edits are tried. "
                     "Or fill one by hand: kagent port TASK --fills FILE")
    strategy = make_strategy(config.strategy, policies=policies, llm=llm,
                             llm_every=config.llm.every if config.llm else 2, ports=ports) \
        if config.strategy == "agent" else make_strategy(config.strategy)
    store = Store(run.out / "kagent.sqlite", hooks.notice)
    own_worker = None
    try:
        executor: Executor
        if config.executor == "gpu":
            if worker is None:
                worker = own_worker = GpuWorker(device)
            executor = GpuExecutor(run.task, space, worker, config.arch, settings or SEARCH_SETTINGS)
        elif config.executor == "compile-only":
            executor = CompileOnlyExecutor(run.task, space, config.arch, emulate=config.emulate)
        else:
            executor = ReplayExecutor(run.task, space, Path(config.recording or ""))
            for label in executor.stale:
                hooks.notice(f"kernel {label} changed since {config.recording} was recorded: it is compiled for "
                             "real and not run here")
        if hooks.on_start:
            hooks.on_start(executor, llm)
        result = search(config, space, executor, strategy, run.folder, store, hooks.on_batch)
    finally:
        store.close()
        if own_worker is not None:
            own_worker.close()
    write_outputs(result, space, run.folder, strategy)  # the results first: a policies folder may be unwritable
    if config.strategy == "agent":
        policies.runs += 1
        try:
            policies.merge_into(policy_path, start)
        except OSError as exc:
            hooks.notice(f"the learned policies were not saved to {policy_path} ({exc.strerror or exc}); the "
                         "run's results are complete")
    return result


def _write_start(run: Run, notice: Callable[[str], None], url: str | None, worker: GpuWorker | None,
                 device: int) -> None:
    """A task without a starting kernel: the model writes the first (FirstKernelError when it cannot);
    it is kept as the run's start and stands as the task's baseline from here on."""
    from .first_kernel import first_kernel

    settings = run.config.llm
    assert settings is not None  # new_run refuses such a task without a model or a --kernel
    gpu = None
    if run.config.executor == "gpu":
        gpu = SharedGpu(device, worker)
    try:
        client = _client(settings, url, run.config.seed)
        path = first_kernel(Path(run.config.task_file), run.task, run.folder, client, settings.small,
                            run.config.arch, gpu, FIRST_KERNEL_ROUNDS, notice)
    finally:
        if gpu is not None:
            gpu.close()
    (run.folder / GIVEN).mkdir(exist_ok=True)
    shutil.copyfile(path, run.folder / START)
    run.config.start = START
    run.config.save(run.folder)
    run.task = starting(run.task, run.config, run.folder)


def _client(settings: LLMSettings, url: str | None, seed: int) -> LLMClient:
    from ..llm.client import LLMClient
    from ..llm.settings import load_llm_config

    llm_config = load_llm_config(model=settings.model, base_url=url or settings.base_url,
                                 token_budget=settings.token_budget, timeout_s=settings.timeout_s,
                                 grammar=settings.grammar)
    assert llm_config is not None  # a model is named
    return LLMClient(llm_config, seed=seed)


def _llm_proposer(run: Run, space: Space, notice: Callable[[str], None], url: str | None) -> Proposer | None:
    settings = run.config.llm
    if settings is None:
        return None
    from ..llm.proposer import LLMProposer

    proposer = LLMProposer(_client(settings, url, run.config.seed), run.task, space, run.folder,
                           generic=run.config.generic, arch=run.config.arch, notice=notice, small=settings.small,
                           winners=run.out / WINNERS_FOLDER)
    if run.config.time_limit_s is not None:  # no model call outlives the run's time limit
        proposer.deadline = time.monotonic() + run.config.time_limit_s
    return proposer


def _warm_start_policies(config: RunConfig, policy_path: Path, run_dir: Path,
                         notice: Callable[[str], None]) -> PolicyBook:
    """The policies as at the run's start, kept in the run folder so that a resumed run starts the same."""
    snapshot = run_dir / "warm_start_policies.json"
    if not snapshot.exists():
        book = PolicyBook()
        if config.warm_start:
            try:
                book = PolicyBook.load(policy_path)
            except PolicyError as exc:
                notice(f"{exc}: starting from untrained policies (the file is replaced at the end of the run)")
        book.save(snapshot)
    try:
        return PolicyBook.load(snapshot)
    except PolicyError as exc:
        raise OptimizeInputError(f"{exc}: the run folder is damaged") from None
