"""Full sum: the NumPy reference (float64 accumulation) and torch's library version."""

import numpy as np


def full_sum(x):
    return np.asarray(np.sum(x, dtype=np.float64))


def torch_full_sum(x):
    return x.sum()
