"""fp32 matrix multiply: the NumPy reference (float64) and torch's library version."""

import numpy as np


def matmul_fp32(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def torch_matmul_fp32(a, b):
    import torch

    return torch.matmul(a, b)
