"""The parts of a task file: tensors (inputs and outputs with their tolerances), scalars and the cost
model, each validated where it is declared (dtypes known, fixed axes positive, scalars in range)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandbox import DTYPES, Init, evaluate

IDENT = r"^[A-Za-z_]\w*$"
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
FLOAT32_MAX = 3.4028234663852886e38


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Tensor(Strict):
    shape: list[str | int] = Field(description="dims by name (or fixed ints); [] for a scalar output")
    dtype: str = "float32"

    @field_validator("shape")
    @classmethod
    def _positive_axes(cls, shape: list[str | int]) -> list[str | int]:
        for axis in shape:
            if isinstance(axis, int) and axis < 1:
                raise ValueError(f"a fixed axis must be at least 1, got {axis}")
        return shape

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        if value not in DTYPES:
            raise ValueError(f"unknown dtype {value!r}; expected one of {', '.join(DTYPES)}")
        return value


class InputInit(Init):
    """An input's Init whose bounds may also be expressions of the dims, e.g. `high: num_classes` for
    class indices: evaluated at each size (`at`)."""

    # widened on purpose (a dim expression is allowed here); `at` gives the sandbox its numbers-only Init
    low: float | str = 0.0  # type: ignore[assignment]
    high: float | str = 1.0  # type: ignore[assignment]

    def expressions(self) -> dict[str, str]:
        return {k: v for k, v in (("low", self.low), ("high", self.high)) if isinstance(v, str)}

    def at(self, dims: dict[str, int]) -> Init:
        """The Init at one size: the sandbox's, numbers only."""
        values = {k: evaluate(v, dims) for k, v in self.expressions().items()}
        return Init.model_validate({**self.model_dump(), **values})


class Input(Tensor):
    init: InputInit = Field(default_factory=InputInit, description="how random inputs are drawn")


class Output(Tensor):
    atol: float = Field(1e-5, ge=0, description="absolute tolerance")
    rtol: float = Field(1e-5, ge=0, description="relative tolerance (times |reference|)")
    exact: bool | None = Field(None, description="compare exactly; default for integer and bool dtypes")
    accumulate: bool = Field(False, description="kernel adds into it (atomics): zeroed, not poisoned")

    @property
    def compare_exactly(self) -> bool:
        return self.exact if self.exact is not None else not DTYPES[self.dtype].is_float


class Scalar(Strict):
    dtype: Literal["float32", "float64", "int32", "int64"] = "float32"
    value: float | int

    @model_validator(mode="after")
    def _fits_its_dtype(self) -> Scalar:
        if self.dtype.startswith("int"):
            if not float(self.value).is_integer():
                raise ValueError(f"value {self.value} is not a whole number, as {self.dtype} needs")
            low, high = INT_RANGES[self.dtype]
            if not low <= int(self.value) <= high:
                raise ValueError(f"value {self.value} does not fit {self.dtype} ({low}..{high})")
            self.value = int(self.value)
        elif not math.isfinite(self.value) or (self.dtype == "float32" and abs(self.value) > FLOAT32_MAX):
            raise ValueError(f"value {self.value} is not a finite {self.dtype}")
        return self


class Cost(Strict):
    bytes: str | None = Field(None, description="bytes a perfect kernel moves through DRAM (expression)")
    flops: str | None = Field(None, description="floating-point operations (expression)")
