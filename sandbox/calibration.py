"""The roofline's ceilings per GPU (copy bandwidth, FMA rate), measured once and cached on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .client import GpuWorker
from .outcome import Roofline, Timing


def _cache_file(uuid: str) -> Path:
    root = Path(os.environ.get("KAGENT_CACHE_DIR", Path.home() / ".cache" / "kagent"))
    return root / "calibration" / f"{uuid or 'unknown'}.json"


def ceilings(worker: GpuWorker, remeasure: bool = False) -> dict:
    """{'copy_gbps', 'fma_gflops', 'device'} for the worker's GPU, from the cache unless asked anew."""
    info = worker.info or worker.start()
    path = _cache_file(info.get("uuid", ""))
    if path.exists() and not remeasure:
        return json.loads(path.read_text())
    measured = worker.calibrate()
    if "copy_gbps" not in measured:
        raise RuntimeError(f"calibration failed: {measured.get('message', measured)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(measured, indent=2))
    return measured


def roofline(timing: Timing, bytes_moved: float | None, flops: float | None, ceiling: dict) -> Roofline:
    seconds = timing.median_ms / 1e3
    result = Roofline(bytes_moved=bytes_moved, flops=flops,
                      bandwidth_gbps=ceiling.get("copy_gbps"), peak_gflops=ceiling.get("fma_gflops"))
    if bytes_moved:
        result.achieved_gbps = bytes_moved / seconds / 1e9
        if result.bandwidth_gbps:
            result.bandwidth_fraction = result.achieved_gbps / result.bandwidth_gbps
    if flops:
        result.achieved_gflops = flops / seconds / 1e9
        if result.peak_gflops:
            result.compute_fraction = result.achieved_gflops / result.peak_gflops
    return result
