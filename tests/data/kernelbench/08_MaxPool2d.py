# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D max pooling over an NCHW image batch."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 16
channels = 48
height = 256
width = 224
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
