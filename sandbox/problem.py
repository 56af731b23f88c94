"""What the GPU worker is asked to do: concrete buffers, launches and settings (no symbolic dims)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from .outcome import Mismatch, Timing


class Init(BaseModel):
    """How to fill an input with seeded random (or fixed) values."""

    kind: Literal["normal", "uniform", "randint", "bernoulli", "constant", "arange", "choice"] = "normal"
    mean: float = 0.0
    std: float = 1.0
    low: float = 0.0
    high: float = 1.0
    p: float = 0.5
    value: float = 0.0
    values: list[float] = Field(default_factory=list, description="choice: the set drawn from, uniformly")

    @model_validator(mode="after")
    def _values_for_choice(self) -> Init:
        if self.kind == "choice" and not self.values:
            raise ValueError("kind choice needs values: the set to draw from, e.g. [-1, 1]")
        if not all(math.isfinite(v) for v in self.values):
            raise ValueError("values must be finite numbers")
        return self


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
    """One problem size: its dims, buffers, the reference's scalars and the cost a perfect kernel pays."""

    label: str
    dims: dict[str, int] = Field(default_factory=dict, description="the named dims at this size")
    buffers: list[Buffer]
    scalars: dict[str, float | int] = Field(description="reference's scalar keyword arguments")
    bytes_moved: float | None = None
    flops: float | None = None


class Scalar(BaseModel):
    dtype: str
    value: float | int


class Problem(BaseModel):
    """A task as the sandbox judges kernels for it: the reference (and library) function, every size
    (the timed one first), the kernels' parameter order, the scalars and the index type for dims."""

    reference: str = Field(description="'/abs/path/file.py:function'")
    library: str | None = Field(None, description="'/abs/path/file.py:function' over torch tensors")
    sizes: list[SizeCase] = Field(min_length=1, description="the timed size first")
    params: list[str] = Field(description="the kernels' default parameter order")
    scalars: dict[str, Scalar] = Field(default_factory=dict)
    index_dtype: str = "int32"

    @property
    def buffer_names(self) -> set[str]:
        return {b.name for b in self.sizes[0].buffers}


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
    precision: float = Field(0.0, ge=0.0, lt=1.0, description=(
        "stop timing early once every program's median is known to within this fraction (the half-width of "
        "its 95% interval over the median); 0 spends the whole budget"))
    launch_timeout_s: float = Field(10.0, description="watchdog for one launch and its sync")
    reference_timeout_s: float = Field(300.0, description="watchdog for one NumPy reference call")
    time_it: bool = True
    timing_gate: bool = Field(True, description=(
        "hold each timed region until the host has queued all of it (sandbox/timing.py); off only to measure "
        "what the gate changes"))


class Request(BaseModel):
    """Check every program on every size; time them side by side on the timed size."""

    reference: str = Field(description="'/abs/path/file.py:function'")
    library: str | None = Field(None, description="'/abs/path/file.py:function' over torch tensors")
    sizes: list[SizeCase]
    timed_index: int
    programs: list[Program]
    settings: Settings = Field(default_factory=Settings)


class Reply(BaseModel):
    """The worker's verdict on one Request (or the watchdog's, when the worker hung or died)."""

    status: str
    message: str = ""
    log: str = ""
    sticky: bool = Field(False, description="the CUDA context is lost: the worker exits after this reply")
    failed_program: str | None = None
    mismatch: Mismatch | None = None
    sizes_checked: list[str] = Field(default_factory=list)
    timings: list[Timing | None] = Field(default_factory=list, description="one per program, in request order")
    deterministic: bool | None = None
    library_timing: Timing | None = None
    flags: list[str] = Field(default_factory=list)
