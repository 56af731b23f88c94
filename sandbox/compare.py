"""Compare a kernel's outputs with the reference on the host; report the first and worst errors."""

from __future__ import annotations

import numpy as np

from .dtypes import lookup, to_values
from .outcome import Mismatch
from .problem import Buffer


def compare(buffer: Buffer, got_storage: np.ndarray, expected: np.ndarray) -> Mismatch | None:
    """None when `got` matches; else where it first fails and by how much.

    Float outputs pass where |got - ref| <= atol + rtol * |ref| (NaN passes only where the reference is
    NaN); exact outputs must match bit for bit in storage form.
    """
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
    finite = errors[np.isfinite(errors)]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = errors / np.abs(ref)
    finite_rel = rel[np.isfinite(rel)]
    return Mismatch(
        output=buffer.name,
        max_abs_error=float(finite.max()) if finite.size else float("nan"),
        max_rel_error=float(finite_rel.max()) if finite_rel.size else float("nan"),
        mismatch_fraction=count / bad.size,
        first_bad_index=[int(i) for i in np.unravel_index(first, tuple(buffer.shape) or (1,))],
        expected=float(ref[first]),
        got=float(got[first]),
        detail=f"{count} of {bad.size} elements differ{unwritten}",
    )
