# kagent-expect: reject: data-dependent output shape (boolean mask select)
import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns the strictly positive entries of x as a flat tensor.

    The output length depends on the values in x, not only on its shape.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[x > 0]


batch_size = 2048
dim = 3000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
