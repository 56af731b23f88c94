"""Timing discipline in one place: warm-up, L2 flush, CUDA events, time budget, median and quantiles."""

from __future__ import annotations

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


class EventTimer:
    """Times one launch at a time with CUDA events, L2 flushed before each (worker process only)."""

    def __init__(self):
        import cupy as cp

        self._cp = cp
        l2_bytes = cp.cuda.Device().attributes.get("L2CacheSize", 64 << 20)
        self._flush = cp.empty(max(2 * l2_bytes, 8 << 20), dtype=cp.uint8)
        self._start, self._end = cp.cuda.Event(), cp.cuda.Event()

    def flush_l2(self) -> None:
        self._flush.fill(0)

    def time(self, prepare: Callable[[], None], launch: Callable[[], None]) -> float:
        """Prepare (poison outputs) and flush outside the timed region, then time `launch` in ms."""
        prepare()
        self.flush_l2()
        self._start.record()
        launch()
        self._end.record()
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
