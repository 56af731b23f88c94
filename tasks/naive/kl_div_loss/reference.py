"""KL divergence loss with 'batchmean' reduction, as torch's kl_div(log(predictions), targets):
loss = sum(targets * (log(targets) - log(predictions))) / batch. The NumPy reference (float64) and
torch's version. The inputs are positive but their rows are not normalised: the formula needs neither."""

import numpy as np


def kl_div_loss(predictions, targets):
    p = predictions.astype(np.float64)
    t = targets.astype(np.float64)
    return np.asarray(np.sum(t * (np.log(t) - np.log(p))) / p.shape[0])


def torch_kl_div_loss(predictions, targets):
    import torch

    return torch.nn.functional.kl_div(torch.log(predictions), targets, reduction="batchmean")
