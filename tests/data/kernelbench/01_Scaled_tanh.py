# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise scaled tanh: y = 1.7159 * tanh(2/3 * x). No parameters."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 1.7159 * torch.tanh(x * (2.0 / 3.0))


batch_size = 4096
dim = 2560


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
