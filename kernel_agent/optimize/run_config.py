"""What defines an optimise run, typed: saved as run.json, so `--resume` continues it unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..files import write_atomic


class RunFolderError(ValueError):
    """A run folder that cannot be resumed (its run.json is damaged); the message names the file."""


class LLMSettings(BaseModel):
    """The model a run asks (the agent strategy only). The endpoint is stored without credentials: they
    are given again (flag or environment) when the run is resumed."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    base_url: str | None = Field(None, description="the endpoint as shown: no credentials")
    token_budget: int | None = Field(None, ge=0)
    every: int = Field(2, ge=1, description="ask for a new kernel every this many batches (and when stalled)")
    timeout_s: float | None = Field(None, gt=0, description="seconds per HTTP attempt; None: the config's default")
    small: bool = Field(False, description="small-model prompts: whole files, knobs optional, one answer format")
    port: bool = Field(True, description="port fitting skeletons (the model fills slots) while no kernel is fast")
    grammar: Literal["off", "llama.cpp", "vllm"] | None = Field(
        None, description="answer grammars sent to a server that takes them; None: the config's")


class RunConfig(BaseModel):
    """Everything that defines a run."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    task_file: str
    task: str
    family: str
    arch: str
    strategy: str = "agent"
    seed: int = 0
    budget: int = 40
    batch: int = 4
    executor: str = "gpu"
    emulate: bool = Field(False, description="compile-only: kernels that build are run on the CPU emulator too")
    recording: str | None = None
    time_limit_s: float | None = None
    warm_start: bool = True
    generic: bool = True
    pins: dict[str, str] = Field(default_factory=dict)
    llm: LLMSettings | None = None
    given: list[str] = Field(default_factory=list, description="labels of the kernel files given with --kernel "
                                                                "(kept in the run folder's given/)")
    start: str | None = Field(None, description="for a task without a starting kernel: the run's start (a file in "
                                                "the run folder: --kernel's, or the model's first kernel), which "
                                                "stands as the task's baseline in this run")
    measured_on: str | None = Field(None, description="a compile-only run measured afterwards (`kagent measure`): "
                                                      "on this GPU (its name and architecture)")
    measured_at: str | None = Field(None, description="when `kagent measure` finished (local time, ISO 8601)")

    @model_validator(mode="before")
    @classmethod
    def _flat_llm_keys(cls, data: Any) -> Any:
        """run.json written before the LLM settings were typed held them flat (llm_model, ...)."""
        if isinstance(data, dict) and "llm_model" in data:
            data = dict(data)
            flat = {key: data.pop(f"llm_{key}", None) for key in ("model", "base_url", "token_budget", "every")}
            data["llm"] = {k: v for k, v in flat.items() if v is not None} if flat["model"] else None
        return data

    def save(self, run_dir: Path) -> None:
        write_atomic(run_dir / "run.json", self.model_dump_json(indent=1).encode())

    @classmethod
    def load(cls, run_dir: Path) -> RunConfig:
        path = run_dir / "run.json"
        try:
            return cls.model_validate_json(path.read_text())
        except (OSError, ValueError, ValidationError) as exc:
            raise RunFolderError(f"{path}: not a run's settings kagent can read ({type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0]}); the run folder is damaged") from None
