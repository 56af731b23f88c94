"""Timing discipline in one place: warm-up, L2 flush, CUDA events, time budget, median and quantiles."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import numpy as np

from .outcome import Timing


def summarise(samples_ms: Sequence[float]) -> Timing:
    values = np.asarray(samples_ms, dtype=np.float64)
    return Timing(
        median_ms=float(np.median(values)),
        p10_ms=float(np.quantile(values, 0.1)),
        p90_ms=float(np.quantile(values, 0.9)),
        min_ms=float(values.min()),
        max_ms=float(values.max()),
        repetitions=int(values.size),
    )


def repetitions(estimates_ms: Sequence[float], budget_ms: float, min_reps: int, max_reps: int,
                jitter: int) -> int:
    """How many interleaved rounds fit the budget; the random jitter keeps the last launch unpredictable."""
    per_round = max(sum(estimates_ms), 1e-3)
    return int(min(max(budget_ms / per_round, min_reps), max_reps)) + jitter


def median_half_width(samples_ms: Sequence[float]) -> float:
    """The half-width of a distribution-free 95% interval of the median (order statistics), as a
    fraction of the median: how well the samples pin the median down, whatever the noise's shape."""
    values = np.sort(np.asarray(samples_ms, dtype=np.float64))
    n = values.size
    if n < 6:
        return float("inf")  # too few for the interval to exist at 95%
    spread = 0.98 * np.sqrt(n)  # 1.96 * sqrt(n) / 2 ranks on either side of the middle
    low, high = max(int(np.floor(n / 2 - spread)), 0), min(int(np.ceil(n / 2 + spread)), n - 1)
    median = float(np.median(values))
    return float(values[high] - values[low]) / (2.0 * median) if median > 0 else float("inf")


def precise(samples: Sequence[Sequence[float]], precision: float) -> bool:
    """Every program's median known to within `precision` (a fraction); never with precision 0."""
    return precision > 0 and all(median_half_width(s) <= precision for s in samples)


# The timed region opens only once everything in it is queued. Without this the GPU started the region
# (the start event) as soon as the host recorded it, then waited for the host's launch calls: any time the
# host thread lost the CPU between the two (compiles beside the runs, a busy Ray node) was timed as the
# kernel's. attention_wide timed 1.16x slower (median) with compiles on ~11 of 16 cores beside its runs.
# So a one-thread kernel holds the stream until the host, having queued the start event, the launches and
# the end event, opens it through a flag in mapped host memory, or until GATE_LIMIT_NS have passed: a
# launch that waits for the device itself (a library call that synchronises) then costs that much wall
# time and is still timed right. The region holds the kernel's own time, without the launch latency.
GATE_SOURCE = r"""
extern "C" __global__ void kagent_timing_gate(const volatile int* open, long long limit_ns) {
    long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        if (*open) return;
        __nanosleep(256);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < limit_ns);
}
"""
GATE_LIMIT_NS = 20_000_000  # host stalls beyond 20 ms are rare; a synchronising launch waits this long
CUDA_HOST_ALLOC_MAPPED = 2


class EventTimer:
    """Times one launch at a time with CUDA events, L2 flushed before each, the region gated until all of
    it is queued (worker process only)."""

    def __init__(self, gated: bool = True):
        import cupy as cp

        self._cp = cp
        l2_bytes = cp.cuda.Device().attributes.get("L2CacheSize", 64 << 20)
        self._flush = cp.empty(max(2 * l2_bytes, 8 << 20), dtype=cp.uint8)
        self._start, self._end = cp.cuda.Event(), cp.cuda.Event()
        self._gate = cp.RawKernel(GATE_SOURCE, "kagent_timing_gate") if gated else None
        if self._gate is not None:
            # pinned and mapped: with unified addressing the device reads it at the host's address
            self._flag_ptr = cp.cuda.runtime.hostAlloc(4, CUDA_HOST_ALLOC_MAPPED)
            self._flag = np.ctypeslib.as_array((ctypes.c_int32 * 1).from_address(self._flag_ptr))

    def __del__(self):
        if getattr(self, "_gate", None) is not None:
            self._cp.cuda.runtime.freeHost(self._flag_ptr)

    def flush_l2(self) -> None:
        self._flush.fill(0)

    def time(self, prepare: Callable[[], None], launch: Callable[[], None]) -> float:
        """Prepare (poison outputs) and flush outside the timed region, then time `launch` in ms; `launch`
        only queues its work (it must not wait for the device: the device waits for it)."""
        prepare()
        self.flush_l2()
        if self._gate is not None:
            self._flag[0] = 0
            self._gate((1,), (1,), (np.uint64(self._flag_ptr), np.int64(GATE_LIMIT_NS)))
        try:
            self._start.record()
            launch()
            self._end.record()
        finally:
            if self._gate is not None:
                self._flag[0] = 1
        self._end.synchronize()
        return self._cp.cuda.get_elapsed_time(self._start, self._end)

    def estimate(self, prepare: Callable[[], None], launch: Callable[[], None], warmup_ms: float) -> float:
        """Warm up for about `warmup_ms` (at least two launches); return the median launch time."""
        samples: list[float] = []
        while len(samples) < 2 or sum(samples) < warmup_ms:
            samples.append(self.time(prepare, launch))
            if len(samples) >= 1000:
                break
        return float(np.median(samples[1:]))
