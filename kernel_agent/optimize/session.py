"""Set up an optimise run from user choices: task, executor, strategy, folders; or resume one."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Callable

from sandbox import GpuWorker, Settings, detect_arch, target_arch

from ..files import new_folder
from ..recording import recording_path
from ..task import load_task
from .executors import ExecutorError, GpuExecutor, ReplayExecutor
from .loop import RunConfig, RunResult, search
from .policy import PolicyBook, PolicyError
from .run_report import write_outputs
from .space import Space
from .store import Store
from .strategies import STRATEGIES, make_strategy

EXECUTORS = ("auto", "gpu", "replay")


class OptimizeInputError(ValueError):
    """Bad user input: the message says what to change (exit code 2)."""


def check_strategy(strategy: str, llm_model: str | None) -> None:
    if strategy not in STRATEGIES:
        raise OptimizeInputError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if llm_model and strategy != "agent":
        raise OptimizeInputError(f"--llm drives the agent's planner and specialists: use --strategy agent, not {strategy}")


def new_config(task_file: Path, out: Path, strategy: str, seed: int, budget: int, batch: int,
               executor: str, recording: Path | None, time_limit_s: float | None, warm_start: bool,
               device: int, notice: Callable[[str], None], pins: dict[str, str] | None = None,
               llm: dict | None = None) -> RunConfig:
    if budget < 1:
        raise OptimizeInputError(f"--budget must be at least 1 evaluation, got {budget}")
    if batch < 1:
        raise OptimizeInputError(f"--batch must be at least 1, got {batch}")
    if executor not in EXECUTORS:
        raise OptimizeInputError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    llm = llm or {}
    check_strategy(strategy, llm.get("llm_model"))
    task = load_task(task_file)
    if executor == "auto":
        executor = "gpu" if detect_arch(device) is not None else "replay"
        if executor == "replay":
            notice(f"no CUDA GPU found: replaying the recorded H200 sweep of {task.name} "
                   "(timings are recordings, not measurements of this run); --executor gpu needs a GPU")
    elif executor == "gpu" and detect_arch(device) is None:
        raise ExecutorError("--executor gpu: no CUDA GPU found on this machine (try --executor replay)")
    rec = recording_path(task.name, recording) if executor == "replay" else None
    if rec is not None and not rec.exists():
        raise ExecutorError(f"no recorded sweep for task {task.name} at {rec}: record one on a GPU with "
                            f"`kagent sweep {task_file} --out {rec}`, or pass --recording FILE")
    arch = "sm_90" if executor == "replay" else target_arch()
    run_id = f"{strategy}-s{seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    return RunConfig(run_id=run_id, task_file=str(task_file), task=task.name, family=task.family or task.name,
                     arch=arch, strategy=strategy, seed=seed, budget=budget, batch=batch, executor=executor,
                     recording=str(rec) if rec else None, time_limit_s=time_limit_s, warm_start=warm_start,
                     generic=executor == "gpu", pins=dict(pins or {}), **llm)


def run_folder(out: Path, config: RunConfig) -> Path:
    try:
        folder = new_folder(out / config.task, config.run_id)
    except OSError as exc:
        raise OptimizeInputError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None
    config.run_id = folder.name
    return folder


def find_run(out: Path, resume: str) -> Path:
    """A run folder given as a path, or as a run id under OUT/<task>/."""
    candidates = [Path(resume), *sorted(out.glob(f"*/{resume}"))]
    for folder in candidates:
        if (folder / "run.json").is_file():
            return folder
    raise OptimizeInputError(f"--resume {resume}: no run folder with a run.json (looked at {resume} and {out}/*/{resume})")


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


def _llm_proposer(config: RunConfig, task, space: Space, run_dir: Path, notice: Callable[[str], None],
                  url: str | None):
    if not config.llm_model:
        return None
    from ..llm.client import LLMClient
    from ..llm.proposer import LLMProposer
    from ..llm.settings import load_llm_config

    llm_config = load_llm_config(model=config.llm_model, base_url=url or config.llm_base_url,
                                 token_budget=config.llm_token_budget)
    proposer = LLMProposer(LLMClient(llm_config), task, space, run_dir, generic=config.generic, arch=config.arch,
                           notice=notice)
    if config.time_limit_s is not None:  # no model call outlives the run's time limit
        proposer.deadline = time.monotonic() + config.time_limit_s
    return proposer


def execute(config: RunConfig, run_dir: Path, out: Path, device: int = 0, settings: Settings | None = None,
            on_start: Callable | None = None, on_batch: Callable | None = None,
            notice: Callable[[str], None] = print, worker: GpuWorker | None = None,
            llm_url: str | None = None) -> RunResult:
    """Run (or resume) the search; on a GPU, in `worker` if given (left open), else in a new one.
    `llm_url`: the LLM endpoint as given (with any credentials); run.json keeps it without them."""
    task = load_task(config.task_file)
    space = Space.of_task(task, generic=config.generic)
    pin_knobs(space, config.pins)
    config.save(run_dir)
    policy_path = PolicyBook.path(out / "policies", config.arch, config.family)
    policies = _warm_start_policies(config, policy_path, run_dir, notice)
    start = copy.deepcopy(policies)
    llm = _llm_proposer(config, task, space, run_dir, notice, llm_url)
    strategy = make_strategy(config.strategy, policies=policies, llm=llm, llm_every=config.llm_every) \
        if config.strategy == "agent" else make_strategy(config.strategy)
    store = Store(out / "kagent.sqlite", notice)
    own_worker = None
    try:
        if config.executor == "gpu":
            if worker is None:
                worker = own_worker = GpuWorker(device)
            executor = GpuExecutor(task, space, worker, config.arch, settings or Settings(budget_ms=200))
        else:
            executor = ReplayExecutor(task, space, Path(config.recording))
            for label in executor.stale:
                notice(f"kernel {label} changed since {config.recording} was recorded: it is compiled for real "
                       "and not run here")
        if on_start:
            on_start(config, space, executor, strategy)
        result = search(config, space, executor, strategy, run_dir, store, on_batch)
    finally:
        store.close()
        if own_worker is not None:
            own_worker.close()
    write_outputs(result, space, run_dir, strategy)  # the results first: a policies folder may be unwritable
    if config.strategy == "agent":
        policies.runs += 1
        try:
            policies.merge_into(policy_path, start)
        except OSError as exc:
            notice(f"the learned policies were not saved to {policy_path} ({exc.strerror or exc}); the run's "
                   "results are complete")
    return result


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
