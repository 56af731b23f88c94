"""Matmul + bias + ReLU: the NumPy reference (float64) and torch's library version."""

import numpy as np


def matmul_bias_relu(a, b, bias):
    y = a.astype(np.float64) @ b.astype(np.float64)
    y += bias
    np.maximum(y, 0.0, out=y)
    return y


def torch_matmul_bias_relu(a, b, bias):
    import torch

    return torch.relu(a @ b + bias)
