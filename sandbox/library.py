"""The task's library function (e.g. torch), timed on the very device buffers the kernel read, in the
worker process. It is the task author's trusted code, but its failure must not cost the kernel's
verdict: it becomes a flag, as does an answer that disagrees with the reference."""

from __future__ import annotations

import cupy as cp
import numpy as np

from .compare import compare
from .dtypes import lookup, to_storage
from .inputs import load_function, sizes_asked
from .outcome import Timing
from .problem import Settings, SizeCase
from .timing import EventTimer, repetitions, summarise


def time_library(spec: str, case: SizeCase, inputs: dict[str, cp.ndarray], reference: dict[str, np.ndarray],
                 settings: Settings) -> tuple[Timing | None, list[str]]:
    """(timing, flags): the library function's timing beside the kernel's, or None and why not."""
    try:
        import torch

        return _time(torch, load_function(spec), case, inputs, reference, settings)
    except Exception as exc:
        return None, [f"library baseline not timed: {type(exc).__name__}: {exc}"]


def _time(torch, function, case: SizeCase, inputs: dict[str, cp.ndarray], reference: dict[str, np.ndarray],
          settings: Settings) -> tuple[Timing, list[str]]:
    tensors = {}
    for b in case.buffers:
        if b.role == "input":
            tensor = torch.from_dlpack(inputs[b.name].reshape(b.shape))
            tensors[b.name] = tensor.view(torch.bfloat16) if b.dtype == "bfloat16" else tensor

    sizes = sizes_asked(function, case.dims, {*tensors, *case.scalars})

    def call():
        return function(**tensors, **case.scalars, **sizes)

    flags = []
    result = call()
    torch.cuda.synchronize()
    first_output = next(b for b in case.buffers if b.role == "output")
    got = (result[0] if isinstance(result, (tuple, list)) else result).float().cpu().numpy().reshape(-1)
    if compare(first_output, to_storage(got, lookup(first_output.dtype)), reference[first_output.name]):
        flags.append("library baseline disagrees with the reference")
    timer = EventTimer(settings.timing_gate)
    estimate = timer.estimate(lambda: None, call, settings.warmup_ms)
    reps = repetitions([estimate], settings.budget_ms, settings.min_reps, settings.max_reps, 0)
    return summarise([timer.time(lambda: None, call) for _ in range(reps)]), flags
