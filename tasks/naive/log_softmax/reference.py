"""Log-softmax over rows, y = x - max - log(sum(exp(x - max))): the NumPy reference (float64) and
torch's version."""

import numpy as np


def log_softmax(x):
    z = x.astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    z -= np.log(np.exp(z).sum(axis=1, keepdims=True))
    return z


def torch_log_softmax(x):
    import torch

    return torch.log_softmax(x, dim=1)
