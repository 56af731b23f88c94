# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """Running (inclusive) sum along dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=1)


batch_size = 2048
seq_len = 8000


def get_inputs():
    return [torch.randn(batch_size, seq_len)]


def get_init_inputs():
    return []
