# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalisation over the last dim, with learnable weight and bias."""

    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, elementwise_affine=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 64
seq_len = 512
hidden = 768


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [(hidden,)]
