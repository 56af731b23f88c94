"""The typed verdict on a candidate: status class, resources, correctness detail, timings."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

SUSPECT = "suspect:"  # the prefix of a flag that casts doubt on a kernel's figures
# A wrong element is often NaN (an output never written) or infinite: in JSON such a float is written as the
# string "NaN" or "Infinity", which reads back as the float, where pydantic's default (null) would not.
KEEP_NAN = ConfigDict(ser_json_inf_nan="strings")


class Status(str, Enum):
    ok = "ok"
    compile_error = "compile_error"
    resource_error = "resource_error"
    launch_error = "launch_error"
    runtime_error = "runtime_error"
    timeout = "timeout"
    wrong_result = "wrong_result"
    nondeterministic = "nondeterministic"
    not_run = "not_run"  # compiled and planned, but nothing could run it (replay has no recording of it)


class KernelResources(BaseModel):
    """What ptxas reports for one __global__ function."""

    name: str
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack_bytes: int = 0
    static_smem_bytes: int = 0


class BadValue(BaseModel):
    """One wrong element: where (an index per dim), what the reference holds, what the kernel wrote."""

    model_config = KEEP_NAN

    index: list[int]
    expected: float
    got: float


class Mismatch(BaseModel):
    """Where and how badly a kernel went wrong."""

    model_config = KEEP_NAN

    program: str = ""
    size: str = ""
    phase: str = Field("", description="check | repeat | timed | fresh | guard | inputs")
    output: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatch_fraction: float | None = None
    first_bad_index: list[int] | None = None
    expected: float | None = None
    got: float | None = None
    first_bad: list[BadValue] = Field(default_factory=list, description="the first few wrong elements, in order")
    detail: str = ""


class Timing(BaseModel):
    median_ms: float
    p10_ms: float
    p90_ms: float
    min_ms: float
    max_ms: float
    repetitions: int


class Roofline(BaseModel):
    bytes_moved: float | None = None
    flops: float | None = None
    achieved_gbps: float | None = None
    achieved_gflops: float | None = None
    bandwidth_gbps: float | None = Field(None, description="measured device-to-device copy bandwidth")
    peak_gflops: float | None = Field(None, description="measured fp32 FMA rate")
    bandwidth_fraction: float | None = None
    compute_fraction: float | None = None

    @property
    def fraction(self) -> float | None:
        values = [f for f in (self.bandwidth_fraction, self.compute_fraction) if f is not None]
        return max(values) if values else None


class Outcome(BaseModel):
    status: Status
    message: str = Field("", description="one line saying what happened")
    log: str = Field("", description="trimmed compiler or runtime log, first error kept")
    candidate_id: str = ""
    arch: str = ""
    resources: list[KernelResources] = Field(default_factory=list)
    sizes_checked: list[str] = Field(default_factory=list)
    mismatch: Mismatch | None = None
    timing: Timing | None = None
    baseline_timing: Timing | None = None
    library_timing: Timing | None = None
    speedup: float | None = Field(None, description="baseline median / this median, same run")
    library_speedup: float | None = None
    roofline: Roofline | None = None
    flags: list[str] = Field(default_factory=list, description="suspicious findings, e.g. beyond roofline")
    deterministic: bool | None = Field(None, description="bitwise-equal outputs across repeated runs")

    @property
    def correct(self) -> bool:
        return self.status is Status.ok

    @property
    def suspect(self) -> bool:
        """A flag that casts doubt on the kernel's figures (not an informational one, such as a library
        function that could not be timed)."""
        return any(flag.startswith(SUSPECT) for flag in self.flags)


def trim_log(text: str, head: int = 40, tail: int = 15, first_error: str = "error") -> str:
    """Keep the first error (with context) and the tail: the two parts a reader acts on."""
    lines = text.rstrip().splitlines()
    if len(lines) <= head + tail:
        return "\n".join(lines)
    first = next((i for i, line in enumerate(lines) if first_error in line), 0)
    start = max(0, min(first - 5, len(lines) - head - tail))
    kept = lines[start : start + head]
    omitted = len(lines) - len(kept) - tail
    return "\n".join([*kept, f"... ({omitted} lines omitted) ...", *lines[-tail:]])
