# kagent-expect: import
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Negative log-likelihood of class indices under a softmax over the last dim, averaged over rows.

    The targets are int64 indices below num_classes: their bound follows a size constant.
    """

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.nll_loss(F.log_softmax(logits, dim=-1), labels)


rows = 8192
num_classes = 1000


def get_inputs():
    return [torch.randn(rows, num_classes), torch.randint(0, num_classes, (rows,))]


def get_init_inputs():
    return []
