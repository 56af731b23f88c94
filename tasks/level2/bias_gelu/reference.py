"""Bias add fused with tanh-approximated GELU: the NumPy reference (float64) and torch's version."""

import numpy as np

_C = np.sqrt(2.0 / np.pi)


def bias_gelu(x, bias):
    v = x.astype(np.float64)
    v += bias
    # 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), in place to keep memory low
    u = v * v
    u *= 0.044715
    u += 1.0
    u *= v
    u *= _C
    np.tanh(u, out=u)
    u += 1.0
    u *= 0.5
    u *= v
    return u


def torch_bias_gelu(x, bias):
    import torch

    return torch.nn.functional.gelu(x + bias, approximate="tanh")
