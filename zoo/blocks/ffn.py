"""Position-wise feed-forward network (the paper's eq. 2): FFN(x) = act(x W1 + b1) W2 + b2."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from torch import Tensor, nn

from zoo.blocks.dropout import Dropout
from zoo.blocks.linear import Linear

# "gelu_tanh" is GPT-2's tanh approximation (Hugging Face's "gelu_new"): its weights were trained
# with it, and the exact erf form moves GPT-2's logits by ~1e-3.
ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "gelu_tanh": partial(nn.GELU, approximate="tanh"),
}


class FeedForward(nn.Module):
    """(B, T, D) -> (B, T, D) through a hidden width `ffn_dim`.

    Args:
        dim: model width D.
        ffn_dim: hidden width (the paper's d_ff = 4 D).
        activation: a key of ACTIVATIONS ("relu" as in the paper, "gelu" as in BERT/ViT,
            "gelu_tanh" as in GPT-2).
        dropout: dropout on the hidden activations (tensor2tensor's relu_dropout; 0 in the paper).
        bias: whether the linear layers have biases.
    """

    def __init__(
        self, dim: int, ffn_dim: int, *, activation: str = "relu", dropout: float = 0.0, bias: bool = True
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose from {sorted(ACTIVATIONS)}")
        self.fc1 = Linear(dim, ffn_dim, bias=bias)
        self.act = ACTIVATIONS[activation]()
        self.dropout = Dropout(dropout)
        self.fc2 = Linear(ffn_dim, dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.dropout(self.act(self.fc1(x))))
