"""The full H200 sweeps of the wide spaces against H200 samples of the same spaces: a combination that
is in both should time the same (median ratio within 3%). This comparison is how the bias of timing
beside compiles was found (attention_wide, see tasks/wide/README.md).

Attention's samples: the first was made in another session on another H200, and the same script run
again in the session of the full sweep (`_resample`) times it 2.8% slower (median), 0.94x to 1.14x
(10th to 90th percentile). A compute-bound kernel's time moves that much from machine to machine, so
attention's sweep is compared with the sample of its own session; maxpool2d and transpose (memory-bound)
agree with samples from other sessions within 1%."""

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


def _median_ratio(a: Path, b: Path) -> float:
    first, second = _times(load_foreign(a)), _times(load_foreign(b))
    ratios = [first[k] / second[k] for k in first.keys() & second.keys()]
    assert len(ratios) >= 200
    return statistics.median(ratios)


@pytest.mark.parametrize(("name", "sample"), [
    ("maxpool2d_wide", "maxpool2d_wide_H200_sample"),
    ("transpose_wide", "transpose_wide_H200_sample"),
    ("attention_wide", "attention_wide_H200_resample"),
])
def test_a_full_sweep_times_what_its_sample_timed(name, sample):
    ratio = _median_ratio(H200 / "wide_sweeps" / f"{name}.json.gz", H200 / "wide_samples" / f"{sample}.json.gz")
    assert 0.97 <= ratio <= 1.03, ratio


def test_the_two_attention_samples_of_two_sessions_agree_within_5_percent():
    samples = H200 / "wide_samples"
    ratio = _median_ratio(samples / "attention_wide_H200_resample.json.gz", samples / "attention_wide_H200_sample.json.gz")
    assert 1.0 < ratio < 1.05, ratio  # 1.028: the session of the full sweep was the slower one
