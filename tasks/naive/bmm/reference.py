"""Batched matrix multiply C[p] = A[p] @ B[p]: the NumPy reference (float64) and torch's version."""

import numpy as np


def bmm(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def torch_bmm(a, b):
    import torch

    return torch.bmm(a, b)   # fp32 unless torch.backends.cuda.matmul.allow_tf32 is set: a comparison only
