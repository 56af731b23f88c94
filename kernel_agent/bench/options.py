"""A bench's settings (saved as bench.json, so `--resume` continues it unchanged), its tasks, and the
results it has finished."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from sandbox import gpu_count

from ..files import new_folder, write_atomic
from ..optimize.executors import ExecutorError
from ..optimize.run_config import LLMSettings
from ..optimize.session import EXECUTORS, check_strategy
from ..task import Task, load_suite
from .results import InfrastructureError, TaskResult

INFRA_FOLDER = "infrastructure"  # run_dir/infrastructure/TASK.json: tasks lost to the cluster, retried by --resume


class BenchInputError(ValueError):
    """Bad user input: the message says what to change (exit code 2)."""


class BenchConfig(BaseModel):
    """Everything that defines a bench; saved as bench.json so `--resume` continues it unchanged."""

    run_id: str
    paths: list[str] = Field(description="suite folders or task files, as given")
    mode: str = Field(description="as-written | kernels | optimize")
    kernels: str | None = None
    budget: int = 40
    strategy: str = "agent"
    seed: int = 0
    executor: str = Field(description="gpu or replay")
    gpus: list[int] = Field(default_factory=list)
    budget_ms: float = 200.0
    llm: LLMSettings | None = None

    @field_validator("llm", mode="before")
    @classmethod
    def _older_bench_json(cls, value: Any) -> Any:
        """bench.json written before the LLM settings were typed held a flat dict ({} for none)."""
        if isinstance(value, dict) and ("llm_model" in value or not value):
            flat = {key: value.get(f"llm_{key}") for key in ("model", "base_url", "token_budget", "every")}
            return {k: v for k, v in flat.items() if v is not None} if flat["model"] else None
        return value

    def save(self, run_dir: Path) -> None:
        write_atomic(run_dir / "bench.json", self.model_dump_json(indent=1).encode())

    @classmethod
    def load(cls, run_dir: Path) -> BenchConfig:
        return cls.model_validate_json((run_dir / "bench.json").read_text())


def suite_tasks(paths: list[str]) -> list[tuple[Path, Task]]:
    """Every task file under the paths, in order; a task name seen twice is kept once (the first)."""
    for path in paths:
        if not Path(path).exists():
            raise BenchInputError(f"{path}: no such task file or folder")
    found = load_suite(paths)
    if not found:
        raise BenchInputError(f"no task files (*.yaml) under {', '.join(paths)}")
    return found


def finished(run_dir: Path) -> dict[str, TaskResult]:
    """The results of the tasks a bench has finished, by task name."""
    folder = run_dir / "tasks"
    return {p.stem: TaskResult.model_validate_json(p.read_text()) for p in sorted(folder.glob("*.json"))}


def infrastructure_errors(run_dir: Path) -> dict[str, InfrastructureError]:
    """The tasks whose last attempt was lost to the infrastructure, by task name (not finished: a
    resumed bench runs them again)."""
    folder = run_dir / INFRA_FOLDER
    return {p.stem: InfrastructureError.model_validate_json(p.read_text()) for p in sorted(folder.glob("*.json"))}


class BenchOptions(BaseModel):
    """What a user chooses for a new bench (`kagent bench`'s options)."""

    paths: list[str]
    mode: str = Field("as-written", description="as-written | kernels | optimize")
    kernels: Path | None = None
    budget: int = Field(40, ge=1)
    strategy: str = "agent"
    seed: int = Field(0, ge=0)
    executor: str = "auto"
    gpus: str | None = Field(None, description="GPU indices as given, e.g. 0,1 (None: every visible GPU)")
    budget_ms: float = Field(200.0, gt=0)
    llm: LLMSettings | None = None
    cluster: bool = Field(False, description="the tasks go to a Ray cluster (--ray): its GPUs, not this machine's")


def new_config(options: BenchOptions, notice: Callable[[str], None] = print) -> BenchConfig:
    """Check the user's choices (BenchInputError says what to change) and pick the lanes."""
    if not options.paths:
        raise BenchInputError("give a suite folder or task files, e.g. `kagent bench tasks/level1` (or --resume RUN)")
    suite_tasks(options.paths)
    kernels = options.kernels
    if options.mode == "kernels" and (kernels is None or not kernels.is_dir()):
        raise BenchInputError(f"--kernels {kernels}: not a folder (it should hold one TASK.cu per task)")
    if options.mode == "optimize":
        check_strategy(options.strategy, options.llm)
    if options.executor not in EXECUTORS:
        raise BenchInputError(f"--executor must be one of {', '.join(EXECUTORS)}, got {options.executor!r}")
    if options.cluster:
        return _cluster_config(options)
    visible = gpu_count()
    devices = parse_gpus(options.gpus, visible)
    executor = options.executor
    if executor == "auto":
        executor = "gpu" if visible else "replay"
        if executor == "replay":
            notice("no CUDA GPU found: replaying the recorded H200 sweeps (timings are recordings, not "
                   "measurements of this run; kernels without a recording are only compiled)")
    if executor == "gpu" and not visible:
        raise ExecutorError("--executor gpu: no CUDA GPU found on this machine (try --executor replay)")
    return _config(options, executor, devices if executor == "gpu" else [])


def _cluster_config(options: BenchOptions) -> BenchConfig:
    """With --ray the cluster's scheduler gives each task a free GPU on some node, so this machine's GPUs
    do not matter; `auto` means the GPUs (the recordings only when asked: --executor replay)."""
    if options.gpus is not None:
        raise BenchInputError(f"--gpus {options.gpus} picks this machine's GPUs; with --ray the cluster gives each "
                              "task a free GPU: leave --gpus out")
    return _config(options, "gpu" if options.executor == "auto" else options.executor, [])


def _config(options: BenchOptions, executor: str, devices: list[int]) -> BenchConfig:
    kernels = options.kernels
    return BenchConfig(run_id=f"{options.mode}-{time.strftime('%Y%m%d-%H%M%S')}", paths=options.paths,
                       mode=options.mode, kernels=str(kernels) if kernels else None, budget=options.budget,
                       strategy=options.strategy, seed=options.seed, executor=executor, gpus=devices,
                       budget_ms=options.budget_ms, llm=options.llm if options.mode == "optimize" else None)


def parse_gpus(text: str | None, visible: int) -> list[int]:
    """`0,1,3` -> [0, 1, 3]; every visible GPU when not given."""
    if text is None:
        return list(range(visible))
    try:
        devices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BenchInputError(f"--gpus {text}: give GPU indices separated by commas, e.g. 0,1") from None
    if not devices or len(set(devices)) != len(devices):
        raise BenchInputError(f"--gpus {text}: give each GPU index once, e.g. 0,1")
    if not visible:
        raise ExecutorError(f"--gpus {text}: no CUDA GPU is visible on this machine (without one, leave --gpus out)")
    unknown = [d for d in devices if d < 0 or d >= visible]
    if unknown:
        raise ExecutorError(f"--gpus {text}: this machine has {visible} visible GPU(s) (indices 0..{visible - 1}); "
                            f"no GPU {', '.join(map(str, unknown))}")
    return devices


def bench_folder(out: Path, config: BenchConfig) -> Path:
    try:
        folder = new_folder(out, config.run_id)
    except OSError as exc:
        raise BenchInputError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None
    config.run_id = folder.name
    config.save(folder)
    return folder


def find_bench(out: Path, resume: str) -> Path:
    """A bench folder given as a path, or as a run id under OUT."""
    for folder in (Path(resume), out / resume):
        if (folder / "bench.json").is_file():
            return folder
    raise BenchInputError(f"--resume {resume}: no bench folder with a bench.json "
                          f"(looked at {resume} and {out / resume})")
