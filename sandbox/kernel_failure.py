"""How a kernel fails inside the worker: a KernelFailure carries its class and evidence out of the
checks; CUDA errors become one (sticky when the context is lost); a wrong result that varies between
identical runs is a race, unless only the first run differs (state kept between launches)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import cupy as cp
import numpy as np

from .classify import classify_cuda_error
from .compare import differing, same_bytes
from .outcome import Mismatch, Status


class KernelFailure(Exception):
    """The kernel under evaluation failed; carries the outcome class and the evidence."""

    def __init__(self, status: Status, message: str, mismatch: Mismatch | None = None, sticky: bool = False):
        super().__init__(message)
        self.status, self.message, self.mismatch, self.sticky = status, message, mismatch, sticky


def failure_class(runs: list[dict], same: bool, message: str) -> tuple[Status, str]:
    """A wrong result that varies from run to run is a race, unless only the first run differs."""
    if same:
        return Status.wrong_result, message
    if all(identical(runs[1], r) for r in runs[2:]):
        return Status.wrong_result, (f"{message}; the first launch differs from later ones "
                                     "(state kept between launches?)")
    return Status.nondeterministic, f"{message}; outputs differ between identical runs (a race?): {differing(runs)}"


def identical(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return all(same_bytes(a[k], b[k]) for k in a)


@contextlib.contextmanager
def cuda_errors() -> Iterator[None]:
    """Turn a CUDA error into a KernelFailure with its class (and whether the context is lost)."""
    try:
        yield
    except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as exc:
        status, sticky = classify_cuda_error(str(exc))
        raise KernelFailure(status, str(exc), sticky=sticky) from None
