"""The caches an exported decoding step reads: its history arrives as graph inputs and leaves as
graph outputs, so ONNX Runtime (not the graph) holds the state between steps.

They stand in for zoo.blocks' KVCache and its containers while torch.export traces the model, so
the exported graph is zoo's own decoding path (zoo.blocks.attention's cache protocol: `cross`,
`mask`, `append`, `is_empty`, `keys`, `values`). Appending concatenates instead of writing into a
preallocated buffer: a graph has no buffer that outlives a call.

Shape key: B rows, H heads, P past positions, T new positions, S source positions, Dk / Dh key /
value head widths.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from zoo.blocks.cache import CausalCache, DecoderCache, DecoderLayerCache

KeysValues = Sequence[tuple[Tensor, Tensor]]
"""Per layer, keys (B, H, P, Dk) and values (B, H, P, Dh)."""


class PastKV:
    """Self-attention keys and values of the steps before: the past (a graph input) grows by the
    new positions into the present (a graph output)."""

    cross = False
    mask = None

    def __init__(self, keys: Tensor, values: Tensor) -> None:
        self.keys, self.values = keys, values

    @property
    def length(self) -> int:
        """P, a symbolic size while exporting: `len()` would make it a constant."""
        return self.keys.shape[2]

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        self.keys = torch.cat([self.keys, k], dim=2)
        self.values = torch.cat([self.values, v], dim=2)
        return self.keys, self.values


class FixedKV:
    """Cross-attention keys and values computed once, by the exported encoder, and read by every
    step: the first step's filling (KVCache.set) has happened before the graph runs."""

    cross = True
    mask = None
    is_empty = False

    def __init__(self, keys: Tensor, values: Tensor) -> None:
        self.keys, self.values = keys, values


class StepCache(DecoderCache):
    """An encoder-decoder's cache of one step: per layer, the past self-attention keys/values and
    the encoder's cross-attention keys/values."""

    @classmethod
    def of(cls, past: KeysValues, cross: KeysValues) -> StepCache:
        return cls([DecoderLayerCache(PastKV(*p), FixedKV(*c)) for p, c in zip(past, cross, strict=True)])

    @property
    def offset(self) -> int:
        return self.layers[0].self_attn.length

    def present(self) -> list[tuple[Tensor, Tensor]]:
        return [(layer.self_attn.keys, layer.self_attn.values) for layer in self.layers]


class StepCausalCache(CausalCache):
    """A decoder-only model's cache of one step: per layer, the past keys/values."""

    @classmethod
    def of(cls, past: KeysValues) -> StepCausalCache:
        return cls([PastKV(*p) for p in past])

    @property
    def offset(self) -> int:
        return self.layers[0].length

    def present(self) -> list[tuple[Tensor, Tensor]]:
        return [(layer.keys, layer.values) for layer in self.layers]
