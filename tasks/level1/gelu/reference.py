"""GELU (tanh approximation): the NumPy reference (float64) and torch's library version."""

import numpy as np


def gelu(x):
    x = x.astype(np.float64)
    u = np.sqrt(2.0 / np.pi) * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + np.tanh(u))


def torch_gelu(x):
    import torch

    return torch.nn.functional.gelu(x, approximate="tanh")
