"""Depthwise 2-D convolution (cross-correlation) of NCHW input with one 3x3 filter per channel, stride 1,
no padding, no bias: y[n, c, i, j] = sum_{dy, dx} w[c, dy, dx] * x[n, c, i + dy, j + dx], HO = H - 2,
WO = W - 2. The NumPy reference (float64) and torch's version (weights viewed as (C, 1, 3, 3), groups = C)."""

import numpy as np


def depthwise_conv2d(x, w):
    x64 = x.astype(np.float64)
    ho, wo = x.shape[2] - 2, x.shape[3] - 2
    y = np.zeros((x.shape[0], x.shape[1], ho, wo))
    for dy in range(3):
        for dx in range(3):
            y += w[None, :, dy, dx, None, None].astype(np.float64) * x64[:, :, dy: dy + ho, dx: dx + wo]
    return y


def torch_depthwise_conv2d(x, w):
    import torch

    # fp32 against fp32: cuDNN convolutions default to TF32 (a process-wide switch; no other task's
    # library function runs a cuDNN convolution)
    torch.backends.cudnn.allow_tf32 = False
    return torch.nn.functional.conv2d(x, w.unsqueeze(1), groups=x.shape[1])
