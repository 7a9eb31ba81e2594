"""Kitaev & Klein's (2018) factored ("partitioned") encoder: content and position kept apart.

The model vector is [content ; position], two halves of D/2. Every projection of the encoder maps
content to content and position to position, so a head's attention score is a content dot
product plus a position dot product, with no content-position cross terms; the halves meet only
in the layer norms. K&K found that a plain encoder leans on positions it should not (section
3.1) and that factoring gains ~0.5 F1 on WSJ; benepar encodes this way by default.

Here the projections keep their dense shapes and their weights are multiplied by a fixed 0/1
block mask (a torch parametrization, so `.weight` is the masked weight wherever it is read): the
blocks stay zero under any optimizer. Each head gets Dh/2 content and Dh/2 position features,
laid out [head 0: content, position | head 1: content, position | ...].

Shape key: B batch, T length, D model dim, H heads, Dh = D / H.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from zoo.blocks.attention import MultiHeadAttention
from zoo.blocks.dropout import Dropout
from zoo.blocks.ffn import FeedForward
from zoo.blocks.positions import build_positions
from zoo.blocks.stacks import Encoder


class _BlockMask(nn.Module):
    """weight -> weight * mask (a parametrization)."""

    def __init__(self, mask: Tensor) -> None:
        super().__init__()
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, weight: Tensor) -> Tensor:
        return weight * self.mask


def halves(width: int) -> Tensor:
    """Feature index -> 1 for the position half of a [content ; position] vector, 0 for content."""
    return (torch.arange(width) >= width // 2).long()


def head_halves(width: int, num_heads: int) -> Tensor:
    """The same for features split into heads: the second half of each head's features."""
    head_dim = width // num_heads
    return (torch.arange(width) % head_dim >= head_dim // 2).long()


def _mask_(linear: nn.Linear, out_parts: Tensor, in_parts: Tensor) -> None:
    mask = (out_parts[:, None] == in_parts[None, :]).to(linear.weight.dtype)
    parametrize.register_parametrization(linear, "weight", _BlockMask(mask.to(linear.weight.device)))


def partition_(encoder: Encoder) -> Encoder:
    """Factor every self-attention and FFN of `encoder` in place; call after initialising it.

    Its input must be [content ; position] (`ConcatPositions`). Needs D divisible by 2 H.
    """
    for layer in encoder.layers:
        attn, ffn = layer.self_attn, layer.ffn
        if type(attn) is not MultiHeadAttention or not isinstance(ffn, FeedForward):
            raise ValueError("partition_ needs full self-attention and a FeedForward in every layer")
        dim, heads = attn.dim, attn.num_heads
        if dim % (2 * heads):
            raise ValueError(
                f"a factored encoder needs dim divisible by 2 x num_heads ({dim}, {heads} heads)"
            )
        model, per_head = halves(dim), head_halves(dim, heads)
        _mask_(attn.qkv_proj, per_head.repeat(3), model)
        _mask_(attn.out_proj, model, per_head)
        hidden = halves(ffn.fc1.out_features)
        _mask_(ffn.fc1, hidden, model)
        _mask_(ffn.fc2, model, hidden)
    return encoder


class ConcatPositions(nn.Module):
    """content (B, T, D/2) -> dropout([content ; positions]) (B, T, D): the factored input.

    Args:
        max_len: longest sequence. dim: D (the positions take D/2).
        positions: a key of POSITIONS. dropout: on the whole input vector.
    """

    def __init__(self, max_len: int, dim: int, *, positions: str = "learned", dropout: float = 0.0) -> None:
        super().__init__()
        self.positions = build_positions(positions, max_len, dim - dim // 2)
        self.dropout = Dropout(dropout)

    def forward(self, content: Tensor) -> Tensor:
        b, t, _ = content.shape
        return self.dropout(torch.cat([content, self.positions(t).expand(b, t, -1)], dim=-1))
