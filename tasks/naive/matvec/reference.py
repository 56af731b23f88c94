"""Matrix-vector product y = A @ x (A is M x K, row-major): the NumPy reference (float64) and torch's
version."""

import numpy as np


def matvec(a, x):
    return a.astype(np.float64) @ x.astype(np.float64)


def torch_matvec(a, x):
    import torch

    return torch.mv(a, x)
