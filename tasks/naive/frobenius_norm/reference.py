"""Frobenius-norm normalisation of a whole tensor, y = x / sqrt(sum(x * x)): the NumPy reference
(float64) and torch's version."""

import numpy as np


def frobenius_norm(x):
    x64 = x.astype(np.float64)
    return x64 / np.sqrt(np.sum(x64 * x64))


def torch_frobenius_norm(x):
    import torch

    return x / torch.norm(x, p="fro")
