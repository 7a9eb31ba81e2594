"""Attention masks as pure functions.

One convention everywhere: bool tensors, True = may attend, broadcastable to (B, H, Tq, Tk),
which is what `F.scaled_dot_product_attention` expects. Combine masks with `&`.
"""

from __future__ import annotations

import torch
from torch import Tensor


def padding_mask(tokens: Tensor, pad_idx: int) -> Tensor:
    """(B, S) token ids -> (B, 1, 1, S) mask that hides padding keys."""
    return (tokens != pad_idx)[:, None, None, :]


def lengths_mask(lengths: Tensor, max_len: int) -> Tensor:
    """(B,) lengths -> (B, 1, 1, max_len) mask that hides positions at or past each length."""
    positions = torch.arange(max_len, device=lengths.device)
    return (positions[None, :] < lengths[:, None])[:, None, None, :]


def causal_mask(
    q_len: int, k_len: int | None = None, *, offset: int = 0, device: torch.device | str | None = None
) -> Tensor:
    """(Tq, Tk) mask: query i (at absolute position offset + i) sees keys 0 .. offset + i.

    `offset` is the number of keys already in a KV cache, so incremental decoding stays aligned.
    """
    k_len = q_len + offset if k_len is None else k_len
    q_pos = torch.arange(q_len, device=device)[:, None] + offset
    k_pos = torch.arange(k_len, device=device)[None, :]
    return k_pos <= q_pos


def local_mask(
    q_len: int,
    k_len: int | None = None,
    *,
    window: int,
    offset: int = 0,
    device: torch.device | str | None = None,
) -> Tensor:
    """(Tq, Tk) restricted-attention mask: query i sees keys within `window` positions of it.

    This is the paper's restricted self-attention with neighbourhood size r = 2 * window + 1.
    """
    k_len = q_len + offset if k_len is None else k_len
    q_pos = torch.arange(q_len, device=device)[:, None] + offset
    k_pos = torch.arange(k_len, device=device)[None, :]
    return (k_pos - q_pos).abs() <= window
