# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean over the last dim without keepdim, so the output has one dim less.

    seq_len and hidden deliberately share a value.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=-1)


batch_size = 32
seq_len = 1024
hidden = 1024


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return []
