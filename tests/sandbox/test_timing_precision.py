"""Timing sized to the noise: the median's interval from order statistics, and when it is tight enough."""

import numpy as np
import pytest

from sandbox import Settings
from sandbox.timing import median_half_width, precise


def test_the_interval_narrows_with_more_samples_and_wider_noise_widens_it():
    rng = np.random.default_rng(0)
    few = 1.0 + 0.01 * rng.standard_normal(20)
    many = 1.0 + 0.01 * rng.standard_normal(500)
    noisy = 1.0 + 0.05 * rng.standard_normal(500)
    assert median_half_width(many) < median_half_width(few)
    assert median_half_width(noisy) > median_half_width(many)
    # about 1.25 sigma / sqrt(n) for normal noise: 0.01 * 1.25 * 1.96 / sqrt(500) ~ 0.0011
    assert median_half_width(many) == pytest.approx(0.0011, rel=0.35)


def test_too_few_samples_or_a_zero_median_are_never_precise():
    assert median_half_width([1.0] * 5) == float("inf")
    assert median_half_width([0.0] * 50) == float("inf")
    assert median_half_width([1.0] * 50) == 0.0


def test_every_program_must_be_precise_and_precision_zero_never_stops_early():
    steady, wobbly = [1.0] * 40, list(np.linspace(0.5, 1.5, 40))
    assert precise([steady, steady], 0.005)
    assert not precise([steady, wobbly], 0.005)
    assert not precise([steady], 0.0)


def test_settings_refuse_a_precision_outside_zero_to_one():
    with pytest.raises(ValueError):
        Settings(precision=-0.1)
    with pytest.raises(ValueError):
        Settings(precision=1.0)
