"""Compare a kernel's outputs with the reference on the host; report the first and worst errors."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .dtypes import lookup, to_values
from .outcome import BadValue, Mismatch
from .problem import Buffer

FIRST_BAD = 6  # wrong elements listed in a mismatch (a person reads the pattern: every other one, a tail...)
CHUNK = 1 << 20  # elements per piece of the fast pass: a few MiB of float64 temporaries, cache-sized
_POOL = ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1))  # NumPy releases the GIL per piece


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-for-bit equality of two arrays' storage: eight bytes at a time where possible, and large
    arrays in cache-sized pieces on every core (no array-sized temporary)."""
    if a.nbytes != b.nbytes:
        return False
    a, b = a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)
    wide = a.nbytes - a.nbytes % 8
    if not np.array_equal(a[wide:], b[wide:]):
        return False
    a64, b64 = a[:wide].view(np.uint64), b[:wide].view(np.uint64)
    if a64.size <= CHUNK:
        return np.array_equal(a64, b64)
    return all(_POOL.map(lambda s: np.array_equal(a64[s], b64[s]), _pieces(a64.size)))


def differing(runs: list[dict[str, np.ndarray]], shown: int = 4) -> str:
    """Which elements differ between the first run and the first later run that differs from it: the
    evidence of a race."""
    for later in runs[1:]:
        for name, first in runs[0].items():
            if same_bytes(first, later[name]):
                continue
            width = first.dtype.itemsize
            changed = first.reshape(-1).view(np.uint8) != later[name].reshape(-1).view(np.uint8)
            bad = np.flatnonzero(changed.reshape(-1, width).any(axis=1))
            where = ", ".join(str(int(i)) for i in bad[:shown]) + (", ..." if bad.size > shown else "")
            return f"{bad.size} of {first.size} elements of {name} (flat index {where})"
    return "no output differs byte for byte"


def compare(buffer: Buffer, got_storage: np.ndarray, expected: np.ndarray) -> Mismatch | None:
    """None when `got` matches; else where it first fails and by how much.

    Float outputs pass where |got - ref| <= atol + rtol * |ref| (NaN passes only where the reference is
    NaN); exact outputs must match bit for bit in storage form. Large outputs are first checked in
    pieces on every core; the detailed (slower) report is only built for a mismatch.
    """
    if got_storage.size > CHUNK and _count_bad_parallel(buffer, got_storage, expected) == 0:
        return None
    return _detailed(buffer, got_storage, expected)


def passes(buffer: Buffer, got_storage: np.ndarray, expected: np.ndarray) -> bool:
    """Whether `got` matches, without building the mismatch report (the fast pass alone)."""
    return _count_bad_parallel(buffer, got_storage, expected) == 0


def _count_bad_parallel(buffer: Buffer, got_storage: np.ndarray, expected: np.ndarray) -> int:
    got, want = got_storage.reshape(-1), expected.reshape(-1)
    return sum(_POOL.map(lambda s: _count_bad(buffer, got[s], want[s]), _pieces(got.size)))


def _pieces(size: int) -> list[slice]:
    return [slice(i, i + CHUNK) for i in range(0, size, CHUNK)]


def _count_bad(buffer: Buffer, got_storage: np.ndarray, expected: np.ndarray) -> int:
    dtype = lookup(buffer.dtype)
    if buffer.exact or not dtype.is_float:
        want = expected.astype(got_storage.dtype, copy=False) if dtype.is_float else expected
        return int(np.count_nonzero(got_storage != want))
    got = to_values(got_storage, dtype).astype(np.float64)
    ref = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.abs(got - ref) <= buffer.atol + buffer.rtol * np.abs(ref)
    ok |= np.isnan(got) & np.isnan(ref)
    ok |= np.isinf(ref) & (got == ref)
    return int(ok.size - np.count_nonzero(ok))


def _detailed(buffer: Buffer, got_storage: np.ndarray, expected: np.ndarray) -> Mismatch | None:
    dtype = lookup(buffer.dtype)
    if buffer.exact or not dtype.is_float:
        got = got_storage.reshape(-1)
        want = expected.reshape(-1).astype(got.dtype) if dtype.is_float else expected.reshape(-1)
        bad = got != want
        unwritten = ""
        errors = np.abs(got.astype(np.float64) - want.astype(np.float64))
        ref = want.astype(np.float64)
    else:
        got = to_values(got_storage.reshape(-1), dtype).astype(np.float64)
        ref = np.asarray(expected, dtype=np.float64).reshape(-1)
        with np.errstate(invalid="ignore", over="ignore"):
            errors = np.abs(got - ref)
            ok = errors <= buffer.atol + buffer.rtol * np.abs(ref)
        ok |= np.isnan(got) & np.isnan(ref)
        ok |= np.isinf(ref) & (got == ref)
        bad = ~ok
        nan_count = int((np.isnan(got) & ~np.isnan(ref)).sum())
        unwritten = f"; {nan_count} are NaN where the reference is not (never written?)" if nan_count else ""
    count = int(bad.sum())
    if count == 0:
        return None
    first = int(np.argmax(bad))
    shape = tuple(buffer.shape) or (1,)
    listed = [int(i) for i in np.flatnonzero(bad[: first + (1 << 16)])[:FIRST_BAD]]  # looked for near the first
    finite = errors[np.isfinite(errors)]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = errors / np.abs(ref)
    finite_rel = rel[np.isfinite(rel)]
    return Mismatch(
        output=buffer.name,
        max_abs_error=float(finite.max()) if finite.size else float("nan"),
        max_rel_error=float(finite_rel.max()) if finite_rel.size else float("nan"),
        mismatch_fraction=count / bad.size,
        first_bad_index=[int(i) for i in np.unravel_index(first, shape)],
        expected=float(ref[first]),
        got=float(got[first]),
        first_bad=[BadValue(index=[int(i) for i in np.unravel_index(flat, shape)], expected=float(ref[flat]),
                            got=float(got[flat])) for flat in listed],
        detail=f"{count} of {bad.size} elements differ{unwritten}",
    )
