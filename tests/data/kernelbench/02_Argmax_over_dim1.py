# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """Index of the largest value along dim 1; the result is an int64 tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=1)


batch_size = 128
dim1 = 1024
dim2 = 320


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return []
