import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer, a residual add and a layer norm over the features."""

    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        return self.norm(self.linear(x) + x)


batch_size = 2048
features = 2048


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
