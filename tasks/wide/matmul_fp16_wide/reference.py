"""fp16 matrix multiply with fp32 output: the NumPy reference (float64) and torch's library version."""

import numpy as np


def matmul_fp16(a, b):
    # The fp16 inputs arrive as their exact values; products and sums in float64.
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def torch_matmul_fp16(a, b):
    import torch

    return torch.matmul(a, b).float()
