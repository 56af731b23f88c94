"""What the worker keeps between requests on the host: a task's inputs and reference outputs (a sweep
checks many candidates against one reference), in page-locked memory where they fit, and page-locked
memory for downloads."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

ENTRIES = 24  # inputs and references of a task's sizes, two seeds each
# and at most half the machine's memory: a KernelBench input alone can be 6.4 GB, and a task's timed size
# with its fresh-check seed holds four such arrays (24 GiB evicted them: every candidate drew them again)
MAX_BYTES = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
# kept values in page-locked memory, at most this much in all: locked pages are lost to everything else
PIN_MAX_BYTES = min(4 << 30, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 16)
_kept: OrderedDict[tuple, Any] = OrderedDict()
_pinned_pool_task: str | None = None  # the task (its reference) whose downloads the pinned pool holds


def kept(key: tuple, make: Callable[[], Any]) -> Any:
    """The value kept under `key`, made (and kept, the oldest dropped) the first time. The newest value
    is always kept, whatever its size."""
    if key not in _kept:
        _kept[key] = make()
        while len(_kept) > 1 and (len(_kept) > ENTRIES or sum(map(_nbytes, _kept.values())) > MAX_BYTES):
            _kept.popitem(last=False)
    _kept.move_to_end(key)
    return _kept[key]


def _nbytes(value: Any) -> int:
    """Host bytes of a kept value: a dict of arrays (inputs or reference outputs)."""
    return sum(getattr(v, "nbytes", 0) for v in value.values()) if isinstance(value, dict) else 0


def pinned_pool_for(reference: str) -> None:
    """Downloads reuse page-locked host memory across one task's candidates. When another task comes,
    the free blocks the last one left are handed back to the system: they fit its sizes, not these."""
    import cupy as cp  # here, so that the cache itself is usable (and tested) without a GPU

    global _pinned_pool_task
    if _pinned_pool_task != reference:
        cp.get_default_pinned_memory_pool().free_all_blocks()
        _pinned_pool_task = reference


class Locked(dict):
    """Arrays kept in page-locked memory (a dict of them, as `page_locked` returns it)."""


def page_locked(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays copied into page-locked memory, where they are uploaded at the bus's full speed (each
    candidate uploads the inputs again, and the device compare the reference); unchanged when that would
    lock more than PIN_MAX_BYTES with what is kept locked already, or locked memory cannot be had."""
    import cupyx  # here, as above

    locked_now = sum(_nbytes(v) for v in _kept.values() if isinstance(v, Locked))
    if locked_now + sum(v.nbytes for v in values.values()) > PIN_MAX_BYTES:
        return values
    locked = Locked()
    for name, array in values.items():
        try:
            host = cupyx.empty_pinned(array.shape, array.dtype)
        except Exception:
            return values
        host[...] = array
        locked[name] = host
    return locked
