"""Encoder and decoder stacks: they build the attention masks once per forward and hand the
same tensors to every layer.

Shape key: B batch, T target length, S source length, D model dim.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.blocks.cache import DecoderCache
from zoo.blocks.layers import DecoderLayer, EncoderLayer
from zoo.blocks.masks import causal_mask, local_mask
from zoo.blocks.norms import build_norm


def stochastic_depth_rates(num_layers: int, max_rate: float) -> list[float]:
    """Drop-path rate rising linearly from 0 to `max_rate` over the layers (timm/DeiT rule)."""
    if num_layers == 1:
        return [max_rate]
    return [max_rate * i / (num_layers - 1) for i in range(num_layers)]


def _final_norm(layer_kwargs: dict, dim: int) -> nn.Module | None:
    """Pre-norm stacks end with a norm (their residual stream is never normalised otherwise)."""
    if not layer_kwargs.get("pre_norm", False):
        return None
    return build_norm(layer_kwargs.get("norm", "layer"), dim, eps=layer_kwargs.get("norm_eps", 1e-5))


def self_attention_mask(q_len: int, *, causal: bool, window: int | None = None,
                        offset: int = 0, device: torch.device | None = None,
                        ) -> tuple[Tensor | None, bool]:
    """The one place that decides between an explicit mask and SDPA's `is_causal` fast path.

    Returns (mask, is_causal). Padding is handled separately (keys only, combined by the caller).
    """
    if window is not None:
        mask = local_mask(q_len, window=window, offset=offset, device=device)
        if causal:
            mask = mask & causal_mask(q_len, offset=offset, device=device)
        return mask, False
    if not causal:
        return None, False
    if offset == 0:
        return None, q_len > 1
    if q_len == 1:  # one new token sees the whole cache
        return None, False
    return causal_mask(q_len, offset=offset, device=device), False


def _combine(a: Tensor | None, b: Tensor | None) -> Tensor | None:
    if a is None:
        return b
    return a if b is None else a & b


class _Stack(nn.Module):
    """Layers applied in order, a final norm for pre-norm stacks, and an optional local window.

    Args:
        layers: the layers, applied in order.
        final_norm: applied to the output (pre-norm stacks).
        window: restricted self-attention half-width (each position sees +-window); None = full.
    """

    layer_class: type[nn.Module]

    def __init__(self, layers: list[nn.Module], *, final_norm: nn.Module | None = None,
                 window: int | None = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.final_norm = final_norm
        self.window = window

    @classmethod
    def uniform(cls, num_layers: int, dim: int, num_heads: int, ffn_dim: int, *,
                window: int | None = None, drop_path: float = 0.0, **layer_kwargs):
        """`num_layers` layers with the same arguments (drop path rising per layer)."""
        rates = stochastic_depth_rates(num_layers, drop_path)
        layers = [cls.layer_class(dim, num_heads, ffn_dim, drop_path=r, **layer_kwargs) for r in rates]
        return cls(layers, final_norm=_final_norm(layer_kwargs, dim), window=window)

    def _finish(self, x: Tensor) -> Tensor:
        return x if self.final_norm is None else self.final_norm(x)


class Encoder(_Stack):
    """A stack of EncoderLayers (+ a final norm when pre-norm). Arguments as for _Stack."""

    layer_class = EncoderLayer

    def forward(self, x: Tensor, *, pad_mask: Tensor | None = None) -> Tensor:
        """x (B, S, D); pad_mask (B, 1, 1, S), True at real tokens -> (B, S, D)."""
        local, _ = self_attention_mask(x.shape[1], causal=False, window=self.window, device=x.device)
        mask = _combine(pad_mask, local)
        for layer in self.layers:
            x = layer(x, mask=mask)
        return self._finish(x)


class Decoder(_Stack):
    """A stack of DecoderLayers with causal self-attention (+ a final norm when pre-norm).

    Targets must be right-padded: causality then keeps real positions from seeing padding, so
    no target padding mask is needed and the fused causal kernel applies. Arguments as for _Stack.
    """

    layer_class = DecoderLayer

    def new_cache(self) -> DecoderCache:
        return DecoderCache.empty(len(self.layers))

    def forward(self, x: Tensor, memory: Tensor | None, *, memory_mask: Tensor | None = None,
                cache: DecoderCache | None = None) -> Tensor:
        """x (B, T, D) embedded targets at positions cache.offset..; memory (B, S, D) -> (B, T, D).

        With a cache, `memory` is only needed on the first call (it fills the cross-attention
        caches).
        """
        offset = cache.offset if cache is not None else 0
        self_mask, is_causal = self_attention_mask(x.shape[1], causal=True, window=self.window,
                                                   offset=offset, device=x.device)
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, self_mask=self_mask, is_causal=is_causal, memory_mask=memory_mask,
                      cache=cache.layers[i] if cache is not None else None)
        return self._finish(x)
