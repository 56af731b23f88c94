"""Masked, scaled row softmax: the NumPy reference (float64) and a torch library version.

Positions where `mask` is false get logit -inf and output exactly 0; a row with no kept position
outputs all zeros.
"""

import numpy as np


def masked_softmax(x, mask, scale):
    mask = mask.astype(bool)
    z = x.astype(np.float64) * scale
    z[~mask] = -np.inf
    m = z.max(axis=1, keepdims=True)
    m[~np.isfinite(m)] = 0.0                  # all-masked rows: any finite shift will do
    z -= m
    np.exp(z, out=z)                          # exp(-inf) = 0 at masked positions
    s = z.sum(axis=1, keepdims=True)
    z *= np.where(s > 0, 1.0 / np.where(s > 0, s, 1.0), 0.0)
    return z


def torch_masked_softmax(x, mask, scale):
    import torch

    logits = (x * scale).masked_fill(~mask.bool(), float("-inf"))
    return torch.softmax(logits, dim=-1).nan_to_num(0.0)   # all-masked rows: NaN -> 0
