# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """Leaky activation whose negative slope is a Python float given to forward."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, alpha: float) -> torch.Tensor:
        return torch.where(x > 0, x, alpha * x)


batch_size = 512
dim = 8192
alpha = 0.5


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x, alpha]


def get_init_inputs():
    return []
