"""Encoder and decoder stacks: they build the attention masks once per forward and hand the
same tensors to every layer.

Shape key: B batch, T target length, S source length, D model dim.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from zoo.blocks.cache import CausalCache, DecoderCache
from zoo.blocks.layers import DecoderLayer, EncoderLayer, LayerSpec
from zoo.blocks.masks import causal_mask, local_mask
from zoo.blocks.norms import build_norm
from zoo.blocks.packing import RealTokens


def stochastic_depth_rates(num_layers: int, max_rate: float) -> list[float]:
    """Drop-path rate rising linearly from 0 to `max_rate` over the layers (timm/DeiT rule)."""
    if num_layers == 1:
        return [max_rate]
    return [max_rate * i / (num_layers - 1) for i in range(num_layers)]


def self_attention_mask(
    q_len: int,
    *,
    causal: bool,
    window: int | None = None,
    offset: int = 0,
    device: torch.device | None = None,
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


class _Stack(nn.Module):
    """Layers applied in order and an optional final norm.

    Args:
        layers: the layers, applied in order.
        final_norm: applied to the output (pre-norm stacks).
        window: the layers' restricted self-attention half-width (None = full attention); the
            decoder builds the band as a mask for cached steps.
    """

    layer_class: type[EncoderLayer | DecoderLayer]

    def __init__(
        self, layers: list[nn.Module], *, final_norm: nn.Module | None = None, window: int | None = None
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.final_norm = final_norm
        self.window = window

    @classmethod
    def uniform(
        cls, num_layers: int, spec: LayerSpec, *, drop_path_rate: float = 0.0, final_norm: bool | None = None
    ):
        """`num_layers` layers built from `spec`, drop path rising per layer to `drop_path_rate`
        (which replaces `spec.drop_path`).

        Args:
            final_norm: end with a norm; None = when pre-norm (the residual stream of a pre-norm
                stack is never normalised otherwise). ViT with average pooling moves it after
                the pooling, so it asks for none.
        """
        rates = stochastic_depth_rates(num_layers, drop_path_rate)
        layers = [cls.layer_class(replace(spec, drop_path=rate)) for rate in rates]
        norm = build_norm(spec.norm, spec.dim, eps=spec.norm_eps)
        with_norm = spec.pre_norm if final_norm is None else final_norm
        return cls(layers, final_norm=norm if with_norm else None, window=spec.window)

    def _finish(self, x: Tensor) -> Tensor:
        return x if self.final_norm is None else self.final_norm(x)


class Encoder(_Stack):
    """A stack of EncoderLayers (+ a final norm when pre-norm). Arguments as for _Stack."""

    layer_class = EncoderLayer

    def forward(self, x: Tensor, *, pad_mask: Tensor | None = None, outputs: slice | None = None) -> Tensor:
        """x (B, S, D); pad_mask (B, 1, 1, S), True at real tokens -> (B, S, D).

        With a window, the layers' LocalAttention applies the band itself and takes only the
        padding mask.

        Args:
            outputs: only these positions are wanted: (B, S', D) comes back, and the last layer
                runs its queries, FFN and norms on them alone (its keys and values still read
                every position). A classifier reading one token (ViT's class token) so skips
                most of its last layer, forward and backward.
        """
        real = RealTokens.of_padding(pad_mask, x)
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            if i == last and outputs is not None:
                x = layer(x, mask=pad_mask, queries=outputs)
            else:
                x = layer(x, mask=pad_mask, real=real)
        return self._finish(x)


class Decoder(_Stack):
    """A stack of DecoderLayers with causal self-attention (+ a final norm when pre-norm).

    Targets must be right-padded: causality then keeps real positions from seeing padding, so
    no target padding mask is needed and the fused causal kernel applies. Arguments as for _Stack.
    """

    layer_class = DecoderLayer

    def new_cache(self) -> DecoderCache:
        return DecoderCache.empty(len(self.layers))

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        *,
        memory_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """x (B, T, D) embedded targets at positions cache.offset..; memory (B, S, D) -> (B, T, D).

        With a cache, `memory` is only needed on the first call (it fills the cross-attention
        caches).
        """
        if cache is None and self.window is not None:  # LocalAttention's blockwise causal band
            self_mask, is_causal = None, True
        else:
            self_mask, is_causal = self_attention_mask(
                x.shape[1],
                causal=True,
                window=self.window,
                offset=cache.offset if cache is not None else 0,
                device=x.device,
            )
        for i, layer in enumerate(self.layers):
            x = layer(
                x,
                memory,
                self_mask=self_mask,
                is_causal=is_causal,
                memory_mask=memory_mask,
                cache=cache.layers[i] if cache is not None else None,
            )
        return self._finish(x)


class CausalStack(_Stack):
    """A decoder-only stack (GPT): EncoderLayers with causal self-attention, no cross-attention,
    a final norm when pre-norm. Arguments as for _Stack; `checkpointing` (an attribute, set by
    the model builder) recomputes each layer's activations in backward instead of keeping them.

    Rows may be left-padded (batched prompts): `key_mask` hides the padding keys. A padding
    query that then sees no key attends to every key instead, as Hugging Face does: its output is
    never read, and an all-hidden row would make the softmax NaN.
    """

    layer_class = EncoderLayer
    checkpointing = False

    def new_cache(self) -> CausalCache:
        return CausalCache.empty(len(self.layers))

    def forward(
        self, x: Tensor, *, key_mask: Tensor | None = None, cache: CausalCache | None = None
    ) -> Tensor:
        """x (B, T, D) at positions cache.offset..; key_mask (B, offset + T) bool, True at real
        tokens (None: no padding) -> (B, T, D)."""
        offset = cache.offset if cache is not None else 0
        mask, is_causal = self_attention_mask(x.shape[1], causal=True, offset=offset, device=x.device)
        if key_mask is not None:
            if is_causal:
                mask = causal_mask(x.shape[1], offset=offset, device=x.device)
            keys = key_mask[:, None, None, :]
            mask, is_causal = (keys if mask is None else keys & mask), False
            mask = mask | ~mask.any(dim=-1, keepdim=True)
        for i, layer in enumerate(self.layers):
            layer_cache = cache.layers[i] if cache is not None else None
            if self.checkpointing and self.training and torch.is_grad_enabled():
                x = checkpoint(layer, x, mask=mask, is_causal=is_causal, use_reentrant=False)
            else:
                x = layer(x, mask=mask, is_causal=is_causal, cache=layer_cache)
        return self._finish(x)
