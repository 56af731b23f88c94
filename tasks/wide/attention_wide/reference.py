"""Single-head attention without a mask: the NumPy reference (float64) and torch's SDPA.

out = softmax(q k^T / sqrt(d)) v for q, k, v of shape (seq, d).
"""

import numpy as np


def attention(q, k, v):
    d = q.shape[1]
    q = q.astype(np.float64)
    s = q @ k.astype(np.float64).T            # (seq, seq) scores
    s *= 1.0 / np.sqrt(d)
    s -= s.max(axis=1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=1, keepdims=True)
    return s @ v.astype(np.float64)


def torch_attention(q, k, v):
    import torch

    seq, d = q.shape
    out = torch.nn.functional.scaled_dot_product_attention(
        q.view(1, 1, seq, d), k.view(1, 1, seq, d), v.view(1, 1, seq, d))
    return out.view(seq, d)
