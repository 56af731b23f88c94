"""The full H200 sweeps of the wide spaces against the H200 samples of the same spaces, recorded in
other sessions on other machines: a combination that is in both should time the same (median ratio
within 3%). This comparison is how the bias of timing beside compiles was found (attention_wide, see
tasks/wide/README.md); a sweep recorded again should pass it."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from kernel_agent.foreign_cache import ForeignCache, load_foreign
from sandbox import Status

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _times(cache: ForeignCache) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(zip(cache.params, values))): ms for values, ms in cache.results.items()
            if not isinstance(ms, Status)}


@pytest.mark.parametrize("name", [
    "maxpool2d_wide",
    "transpose_wide",
    pytest.param("attention_wide", marks=pytest.mark.xfail(
        strict=True, reason="recorded beside compiles on most cores: its times are 1.16x slow; to be recorded again")),
])
def test_a_full_sweep_times_what_its_sample_timed(name):
    sweep = _times(load_foreign(H200 / "wide_sweeps" / f"{name}.json.gz"))
    sample = _times(load_foreign(H200 / "wide_samples" / f"{name}_H200_sample.json.gz"))
    ratios = [sweep[k] / sample[k] for k in sweep.keys() & sample.keys()]
    assert len(ratios) >= 200
    assert 0.97 <= statistics.median(ratios) <= 1.03, statistics.median(ratios)
