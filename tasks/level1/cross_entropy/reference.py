"""Mean cross-entropy with targets taken modulo the class count: NumPy (float64) and torch versions."""

import numpy as np


def cross_entropy(logits, targets):
    x = logits.astype(np.float64)
    classes = x.shape[1]
    t = targets.astype(np.int64) % classes
    m = x.max(axis=1)
    lse = m + np.log(np.exp(x - m[:, None]).sum(axis=1))
    return np.mean(lse - x[np.arange(x.shape[0]), t])


def torch_cross_entropy(logits, targets):
    import torch

    return torch.nn.functional.cross_entropy(logits, (targets % logits.shape[1]).long())
