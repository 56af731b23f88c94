"""Element types a task may use: their NumPy storage, C name, poison value and bf16 conversions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    storage: np.dtype  # how the bytes are held on the host and the GPU
    c_name: str
    is_float: bool
    poison_bits: int  # bit pattern written into outputs before each launch

    @property
    def itemsize(self) -> int:
        return self.storage.itemsize


# bf16 has no NumPy type: it is stored as its raw uint16 bits and widened to float32 for the reference.
DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("float32", np.dtype(np.float32), "float", True, 0x7FC00000),
        DType("float64", np.dtype(np.float64), "double", True, 0x7FF8000000000000),
        DType("float16", np.dtype(np.float16), "__half", True, 0x7E00),
        DType("bfloat16", np.dtype(np.uint16), "__nv_bfloat16", True, 0x7FC0),
        DType("int8", np.dtype(np.int8), "signed char", False, 0x5B),
        DType("uint8", np.dtype(np.uint8), "unsigned char", False, 0xA5),
        DType("int32", np.dtype(np.int32), "int", False, 0x5A5A5A5B),
        DType("int64", np.dtype(np.int64), "long long", False, 0x5A5A5A5A5A5A5A5B),
        DType("bool", np.dtype(np.uint8), "bool", False, 0xA5),
    )
}


def lookup(name: str) -> DType:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(DTYPES)}") from None


def to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest even) and return the uint16 bit patterns."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    rounded = ((bits + rounding) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def to_storage(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Host values (any numeric array) -> the bytes the kernel sees."""
    if dtype.name == "bfloat16":
        return to_bf16_bits(np.asarray(values, dtype=np.float32))
    if dtype.name == "bool":
        return np.asarray(values, dtype=bool).astype(np.uint8)
    return np.asarray(values).astype(dtype.storage)


def to_values(stored: np.ndarray, dtype: DType) -> np.ndarray:
    """Stored bytes -> the values a NumPy reference works with (bf16 widened to float32)."""
    if dtype.name == "bfloat16":
        return from_bf16_bits(stored)
    if dtype.name == "bool":
        return stored.astype(bool)
    return stored


def scalar_type(name: str) -> np.dtype:
    """NumPy type used to pass a scalar kernel argument of this dtype."""
    dtype = lookup(name)
    if dtype.name == "bfloat16":
        raise ValueError("bfloat16 scalars are not supported as kernel arguments; pass float32")
    return dtype.storage
