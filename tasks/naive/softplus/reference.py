"""Softplus, y = log(1 + exp(x)) (torch's default beta 1; above its threshold 20 torch returns x, which
differs from log(1 + exp(x)) by under 3e-9): the NumPy reference (float64) and torch's version."""

import numpy as np


def softplus(x):
    return np.logaddexp(0.0, x.astype(np.float64))


def torch_softplus(x):
    import torch

    return torch.nn.functional.softplus(x)
