"""Group normalisation of an NCHW tensor whose C = G * CG channels form G groups of CG consecutive
channels. The input is given as (N, G, CG, H, W), the same memory as (N, C, H, W), so that every size
sets its own group count; gamma and beta are (G, CG), the same memory as (C,). Each (sample, group) is
normalised by its own mean and biased variance over its CG * H * W values, then scaled and shifted per
channel: y = (x - mean) / sqrt(var + eps) * gamma + beta. The NumPy reference (float64) and torch's
version."""

import numpy as np


def group_norm(x, gamma, beta, eps):
    n, g, cg, h, w = x.shape
    x64 = x.astype(np.float64).reshape(n, g, -1)
    mean = x64.mean(axis=2, keepdims=True)
    var = x64.var(axis=2, keepdims=True)
    y = ((x64 - mean) / np.sqrt(var + eps)).reshape(n, g, cg, h, w)
    return y * gamma[None, :, :, None, None] + beta[None, :, :, None, None]


def torch_group_norm(x, gamma, beta, eps):
    import torch

    n, g, cg, h, w = x.shape
    y = torch.nn.functional.group_norm(x.reshape(n, g * cg, h, w), g, gamma.reshape(-1), beta.reshape(-1), eps)
    return y.reshape(n, g, cg, h, w)
