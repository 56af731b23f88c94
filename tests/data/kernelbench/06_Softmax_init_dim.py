# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over a dimension chosen when the model is built."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=self.dim)


batch_size = 1536
num_classes = 5000
softmax_dim = 1


def get_inputs():
    return [torch.randn(batch_size, num_classes)]


def get_init_inputs():
    return [softmax_dim]
