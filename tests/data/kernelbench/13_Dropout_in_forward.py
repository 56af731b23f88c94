# kagent-expect: reject: random op in forward (dropout), output not reproducible
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Dropout that is always active, so every call draws a fresh random mask."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, p=self.p, training=True)


batch_size = 1024
dim = 4000
p = 0.5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [p]
