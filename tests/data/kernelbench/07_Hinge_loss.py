# kagent-expect: import
import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean hinge loss, max(0, 1 - y * f(x)), for targets y in {-1, +1}.

    Returns a 0-d tensor.
    """

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 524288


def get_inputs():
    predictions = torch.randn(batch_size)
    targets = torch.randint(0, 2, (batch_size,)).float() * 2 - 1
    return [predictions, targets]


def get_init_inputs():
    return []
