# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds a bias row of shape (features,) to every row of x (batch, features)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return x + bias


batch_size = 4096
features = 1536


def get_inputs():
    x = torch.randn(batch_size, features)
    bias = torch.randn(features)
    return [x, bias]


def get_init_inputs():
    return []
