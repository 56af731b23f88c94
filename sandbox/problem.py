"""What the GPU worker is asked to do: concrete buffers, launches and settings (no symbolic dims)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Init(BaseModel):
    """How to fill an input with seeded random (or fixed) values."""

    kind: Literal["normal", "uniform", "randint", "bernoulli", "constant", "arange"] = "normal"
    mean: float = 0.0
    std: float = 1.0
    low: float = 0.0
    high: float = 1.0
    p: float = 0.5
    value: float = 0.0


class Buffer(BaseModel):
    """One device buffer of a size case: an input, an output or a kernel's scratch."""

    name: str
    role: Literal["input", "output", "scratch"]
    dtype: str
    shape: list[int]
    init: Init | None = Field(None, description="inputs only")
    zeroed: bool = Field(False, description="outputs/scratch: zero before each launch instead of poison")
    exact: bool = Field(False, description="outputs: compare exactly (integers) rather than by tolerance")
    atol: float = 0.0
    rtol: float = 0.0

    @property
    def count(self) -> int:
        total = 1
        for n in self.shape:
            total *= n
        return total


class Arg(BaseModel):
    """A kernel argument: a buffer by name, or a scalar value with its dtype."""

    buffer: str | None = None
    dtype: str | None = None
    value: float | int | None = None


class Launch(BaseModel):
    entry: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    args: list[Arg]


class SizeCase(BaseModel):
    """One problem size: its buffers (task's and the program's scratch), scalars and launches."""

    label: str
    buffers: list[Buffer]
    scalars: dict[str, float | int] = Field(description="reference's scalar keyword arguments")
    bytes_moved: float | None = None
    flops: float | None = None


class Program(BaseModel):
    """A compiled kernel file with its launches resolved for every size case (same order)."""

    label: str
    cubin_path: str
    entries: list[str]
    launches: list[list[Launch]]
    scratch: list[list[Buffer]]


class Settings(BaseModel):
    seed: int = 0
    warmup_ms: float = 25.0
    budget_ms: float = Field(400.0, description="time spent in timed launches per program")
    min_reps: int = 10
    max_reps: int = 500
    launch_timeout_s: float = Field(10.0, description="watchdog for one launch and its sync")
    reference_timeout_s: float = Field(300.0, description="watchdog for one NumPy reference call")
    time_it: bool = True


class Request(BaseModel):
    """Check every program on every size; time them side by side on the timed size."""

    reference: str = Field(description="'/abs/path/file.py:function'")
    library: str | None = Field(None, description="'/abs/path/file.py:function' over torch tensors")
    sizes: list[SizeCase]
    timed_index: int
    programs: list[Program]
    settings: Settings = Field(default_factory=Settings)
