"""How a query scores a key: the compatibility function inside multi-head attention.

The paper (section 3.2.1) weighs two: dot-product attention, which it scales by 1/sqrt(d_k)
because q.k grows with d_k and pushes the softmax "into regions where it has extremely small
gradients", and additive attention (Bahdanau et al., 2015), a network with one hidden layer,
"similar in theoretical complexity" but slower and larger in practice. Per head, on queries
(.., T, Dk) and keys (.., S, Dk), the score e (.., T, S) that the softmax reads:

    scaled_dot   e_ij = q_i . k_j / sqrt(Dk)      the paper's eq. 1
    dot          e_ij = q_i . k_j                 the same without the scale
    additive     e_ij = w_h . tanh(q_i + k_j)     w_h a learned Dk vector per head

`bench.studies.scaling` measures why the paper chose the first.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

SCORES: dict[str, str] = {
    "scaled_dot": "q.k / sqrt(d_k) (the paper)",
    "dot": "q.k, unscaled",
    "additive": "w . tanh(q + k) (Bahdanau et al.)",
}


def dot_scores(q: Tensor, k: Tensor, *, scaled: bool = True) -> Tensor:
    """q k^T (.., T, S), divided by sqrt(Dk) when `scaled`."""
    if scaled:
        q = q / math.sqrt(q.shape[-1])  # scaling the smaller side
    return q @ k.transpose(-2, -1)


class AdditiveScore(nn.Module):
    """Bahdanau's score per head: e_ij = w_h . tanh(q_i + k_j), (n, H, T, Dk) queries and
    (n, H, S, Dk) keys -> (n, H, T, S).

    q and k are the attention's own per-head projections (W_q x_i and W_k y_j, their biases the
    hidden layer's), so only w_h is new. The hidden layer holds a (n, H, T, S, Dk) tensor, Dk
    times the scores' size: the memory the dot product never needs, and why it has no fused
    kernel.

    Args:
        num_heads: H.
        key_dim: Dk, the width of a head's queries and keys.
    """

    def __init__(self, num_heads: int, key_dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_heads, key_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # tanh's outputs are O(1) per feature: Dk^-1/2 keeps the scores O(1) at the start.
        nn.init.normal_(self.weight, std=self.weight.shape[1] ** -0.5)

    def forward(self, q: Tensor, k: Tensor) -> Tensor:
        hidden = torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))  # (n, H, T, S, Dk)
        return (hidden @ self.weight[:, None, :, None]).squeeze(-1)
