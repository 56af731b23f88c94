"""1-D convolution (cross-correlation, as in deep learning) of (B, Cin, L) with weights (Cout, Cin, 3),
stride 1, no padding, no bias: y[b, o, l] = sum_{c, j} w[o, c, j] * x[b, c, l + j], LO = L - 2.
The NumPy reference (float64, one tensordot per tap) and torch's version."""

import numpy as np


def conv1d(x, w):
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    taps = w.shape[2]
    lo = x.shape[2] - taps + 1
    y = np.zeros((x.shape[0], w.shape[0], lo))
    for j in range(taps):
        # (Cout, Cin) x (B, Cin, LO) -> (Cout, B, LO)
        y += np.tensordot(w64[:, :, j], x64[:, :, j: j + lo], axes=([1], [1])).transpose(1, 0, 2)
    return y


def torch_conv1d(x, w):
    import torch

    # fp32 against fp32: cuDNN convolutions default to TF32 (a process-wide switch; no other task's
    # library function runs a cuDNN convolution)
    torch.backends.cudnn.allow_tf32 = False
    return torch.nn.functional.conv1d(x, w)
