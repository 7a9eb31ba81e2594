"""The per-row key/value cache (KVCache): one entry per batch row, or per source sentence.

It serves two of MultiHeadAttention's paths while decoding:

- plain self-attention (greedy search, sampling, beam search with one row per source): each step
  appends its keys/values (`append`) into a preallocated buffer that doubles when full, so a step
  costs O(1) copies instead of re-concatenating the history; beam search reorders the rows by
  copying the filled length into a spare buffer (`reorder`).
- cross-attention (`cross=True`): filled once from the encoder output (`set`), one entry per
  source sentence shared by that sentence's rows, and reused by every later step; it changes only
  when sentences leave the batch (`reorder`, through `DecoderCache.select_sources`).

Beam search with k > 1 beams keeps its self-attention keys in zoo.blocks.beam_cache instead.

Keys are stored transposed, (.., Dh, S), and handed out as a transposed view of shape
(.., S, Dh): attention's q @ k^T then reads a plain row-major matrix. On CPU a one-query step's
batched product against a transposed (.., S, Dh) operand ran ~5x slower (0.3 vs 2.4 ms for 628
batches of 4 x 64 by 64 x 26, one thread), 10% of a beam search over Multi30k.

Shape key: B batch rows (or sources), H heads, S cached positions, T new positions, Dh head dim.
"""

from __future__ import annotations

import torch
from torch import Tensor


class _Positions:
    """How many key positions a cache holds (`length`, set by the cache)."""

    length: int

    def __len__(self) -> int:
        return self.length

    @property
    def is_empty(self) -> bool:
        return self.length == 0


class KVCache(_Positions):
    """Keys and values of one attention module, shape (B, H, S, Dh) (keys kept as (B, H, Dh, S)).

    Args:
        cross: a cross-attention cache, filled once from the encoder output (`set`).
    """

    def __init__(self, *, cross: bool = False) -> None:
        self.cross = cross
        self._kt: Tensor | None = None
        self._v: Tensor | None = None
        # The buffers the next reorder writes into (then swapped): reordering every step copies
        # the filled part only, into memory that is already mapped.
        self._spare_kt: Tensor | None = None
        self._spare_v: Tensor | None = None
        self.length = 0

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add (B, H, T, Dh) keys/values; return all keys/values so far."""
        new_len = self.length + k.shape[2]
        if self._kt is None or new_len > self._v.shape[2]:
            self._grow(k, v, new_len)
        self._kt[..., self.length : new_len] = k.transpose(-2, -1)
        self._v[:, :, self.length : new_len] = v
        self.length = new_len
        return self.keys, self.values

    def _grow(self, k: Tensor, v: Tensor, needed: int) -> None:
        capacity = max(needed, 2 * (0 if self._v is None else self._v.shape[2]), 16)
        new_kt = k.new_empty(k.shape[0], k.shape[1], k.shape[3], capacity)
        new_v = v.new_empty(v.shape[0], v.shape[1], capacity, v.shape[3])
        if self._kt is not None:
            new_kt[..., : self.length] = self._kt[..., : self.length]
            new_v[:, :, : self.length] = self.values
        self._kt, self._v = new_kt, new_v
        self._spare_kt = self._spare_v = None

    def set(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store fixed keys/values (cross-attention over the encoder output), contiguous: every
        later step reads them, and strided heads would be copied by the products each time."""
        self._kt, self._v, self.length = k.transpose(-2, -1).contiguous(), v.contiguous(), k.shape[2]
        return self.keys, self.values

    @property
    def mask(self) -> Tensor | None:
        """A mask attention must add for these keys (None: none)."""
        return None

    @property
    def keys(self) -> Tensor:
        return self._kt[..., : self.length].transpose(-2, -1)

    @property
    def values(self) -> Tensor:
        return self._v[:, :, : self.length]

    def reorder(self, index: Tensor) -> None:
        """Keep the batch rows `index` (in that order, repeats allowed); copies the filled length."""
        if self._kt is None:
            return
        kt, v = self._kt[..., : self.length], self.values
        if self._kt.requires_grad and torch.is_grad_enabled():  # out= records no gradient
            self._kt, self._v = kt.index_select(0, index), v.index_select(0, index)
            return
        if self._spare_kt is None or self._spare_kt.shape[0] != index.shape[0]:
            self._spare_kt = self._kt.new_empty(index.shape[0], *self._kt.shape[1:])
            self._spare_v = self._v.new_empty(index.shape[0], *self._v.shape[1:])
        torch.index_select(kt, 0, index, out=self._spare_kt[..., : self.length])
        torch.index_select(v, 0, index, out=self._spare_v[:, :, : self.length])
        self._kt, self._spare_kt = self._spare_kt, self._kt
        self._v, self._spare_v = self._spare_v, self._v
