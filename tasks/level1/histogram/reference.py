"""256-bin histogram: NumPy reference and torch's library version."""

import numpy as np

BINS = 256  # the task's `bins` dim (the reference is not given dims)


def histogram(x):
    inside = x[(x >= 0) & (x < BINS)]
    return np.bincount(inside, minlength=BINS).astype(np.int32)


def torch_histogram(x):
    import torch

    return torch.bincount(x, minlength=BINS).to(torch.int32)
