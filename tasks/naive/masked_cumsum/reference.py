"""Masked inclusive prefix sum along each row, y = cumsum(x * mask): the NumPy reference (float64) and
torch's version."""

import numpy as np


def masked_cumsum(x, mask):
    return np.cumsum(np.where(mask, x.astype(np.float64), 0.0), axis=1)


def torch_masked_cumsum(x, mask):
    import torch

    return torch.cumsum(x * mask, dim=1)
