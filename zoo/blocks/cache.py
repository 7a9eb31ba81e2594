"""Key/value caches for incremental decoding.

A cache is an explicit argument of attention, never hidden module state. Self-attention caches
grow by one step at a time into a preallocated buffer (doubling when full), so a decoding step
costs O(1) copies instead of re-concatenating the whole history. Cross-attention caches are filled
once from the encoder output and reused.

Beam search keeps several hypotheses (rows) per source sentence. Self-attention caches hold one
entry per row and follow the rows when beam search reorders them; cross-attention caches hold one
entry per source sentence, shared by that sentence's rows (see MultiHeadAttention: N query rows
over n sources, N / n consecutive rows per source), so nothing that is fixed within a sentence is
copied per step. They change only when sentences leave the batch (`DecoderCache.select_sources`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor


class KVCache:
    """Keys and values of one attention module, shape (B, H, S, Dh).

    Args:
        cross: a cross-attention cache, filled once from the encoder output (`set`).
    """

    def __init__(self, *, cross: bool = False) -> None:
        self.cross = cross
        self._k: Tensor | None = None
        self._v: Tensor | None = None
        # The buffers the next reorder writes into (then swapped): reordering every step copies
        # the filled part only, into memory that is already mapped.
        self._spare_k: Tensor | None = None
        self._spare_v: Tensor | None = None
        self.length = 0

    def __len__(self) -> int:
        return self.length

    @property
    def is_empty(self) -> bool:
        return self.length == 0

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add (B, H, T, Dh) keys/values; return all keys/values so far."""
        new_len = self.length + k.shape[2]
        if self._k is None or new_len > self._k.shape[2]:
            self._grow(k, v, new_len)
        self._k[:, :, self.length:new_len] = k
        self._v[:, :, self.length:new_len] = v
        self.length = new_len
        return self.keys, self.values

    def _grow(self, k: Tensor, v: Tensor, needed: int) -> None:
        capacity = max(needed, 2 * (0 if self._k is None else self._k.shape[2]), 16)
        new_k = k.new_empty(k.shape[0], k.shape[1], capacity, k.shape[3])
        new_v = v.new_empty(v.shape[0], v.shape[1], capacity, v.shape[3])
        if self._k is not None:
            new_k[:, :, :self.length] = self.keys
            new_v[:, :, :self.length] = self.values
        self._k, self._v = new_k, new_v
        self._spare_k = self._spare_v = None

    def set(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store fixed keys/values (cross-attention over the encoder output).

        Stored contiguous: every later step reads them, and strided heads would be copied by
        the matrix products each time."""
        self._k, self._v, self.length = k.contiguous(), v.contiguous(), k.shape[2]
        return self._k, self._v

    @property
    def keys(self) -> Tensor:
        return self._k[:, :, :self.length]

    @property
    def values(self) -> Tensor:
        return self._v[:, :, :self.length]

    def reorder(self, index: Tensor) -> None:
        """Keep the batch rows `index` (in that order, repeats allowed); copies the filled length."""
        if self._k is None:
            return
        if self._k.requires_grad and torch.is_grad_enabled():  # out= records no gradient
            self._k, self._v = self.keys.index_select(0, index), self.values.index_select(0, index)
            return
        shape = (index.shape[0], *self._k.shape[1:])
        if self._spare_k is None or self._spare_k.shape != shape:
            self._spare_k, self._spare_v = self._k.new_empty(shape), self._v.new_empty(shape)
        torch.index_select(self.keys, 0, index, out=self._spare_k[:, :, :self.length])
        torch.index_select(self.values, 0, index, out=self._spare_v[:, :, :self.length])
        self._k, self._spare_k = self._spare_k, self._k
        self._v, self._spare_v = self._spare_v, self._v


@dataclass
class DecoderLayerCache:
    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=lambda: KVCache(cross=True))


@dataclass
class DecoderCache:
    """Per-layer caches of a decoder stack; `offset` is the number of tokens decoded so far."""

    layers: list[DecoderLayerCache]

    @classmethod
    def empty(cls, num_layers: int) -> "DecoderCache":
        return cls([DecoderLayerCache() for _ in range(num_layers)])

    @property
    def offset(self) -> int:
        return len(self.layers[0].self_attn)

    def reorder(self, index: Tensor) -> None:
        """Keep the hypothesis rows `index` (repeats allowed) of the self-attention caches.

        Each row must stay with its source sentence (the cross-attention caches, one entry per
        sentence, are left as they are): beam expansion and reordering among a sentence's beams.
        """
        for layer in self.layers:
            layer.self_attn.reorder(index)

    def select_sources(self, index: Tensor) -> None:
        """Keep the source sentences `index` of the cross-attention caches (sentences leaving the
        batch; with one row per sentence, also any reordering of them)."""
        for layer in self.layers:
            layer.cross_attn.reorder(index)
