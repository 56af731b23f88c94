"""What the worker keeps between requests on the host: a task's inputs and reference outputs (a sweep
checks many candidates against one reference), and page-locked memory for downloads."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import cupy as cp

ENTRIES = 24  # inputs and references of a task's sizes, two seeds each
_kept: OrderedDict[tuple, Any] = OrderedDict()
_pinned_pool_task: str | None = None  # the task (its reference) whose downloads the pinned pool holds


def kept(key: tuple, make: Callable[[], Any]) -> Any:
    """The value kept under `key`, made (and kept, the oldest dropped) the first time."""
    if key not in _kept:
        _kept[key] = make()
        while len(_kept) > ENTRIES:
            _kept.popitem(last=False)
    return _kept[key]


def pinned_pool_for(reference: str) -> None:
    """Downloads reuse page-locked host memory across one task's candidates. When another task comes,
    the free blocks the last one left are handed back to the system: they fit its sizes, not these."""
    global _pinned_pool_task
    if _pinned_pool_task != reference:
        cp.get_default_pinned_memory_pool().free_all_blocks()
        _pinned_pool_task = reference
