"""Beam search's self-attention cache: keys/values shared per sentence, read through ancestry.

It serves MultiHeadAttention's beam path (beam search with k > 1 beams per source sentence). A
per-row cache (zoo.blocks.kv_cache) would copy every row's whole history each time the beams are
reordered. Here each step's k beams write into k slots of their sentence's buffer (BeamKVCache),
and a small table of which slot each row's ancestor wrote at every step (BeamHistory, one shared
by all layers) becomes the attention mask (`BeamKVCache.mask`), so reordering beams copies no
keys or values at all. MultiHeadAttention adds that mask and runs a sentence's g query rows as one
block against the sentence's keys (its `_group_rows`), as for cross-attention.

Keys are stored transposed, as in KVCache (see zoo.blocks.kv_cache for why).

Shape key: n source sentences, N = g n query rows (g = 1 at the first step, then k), H heads,
t steps cached, k beams (slots) per step, Dh head dim.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from zoo.blocks.kv_cache import _Positions


class BeamHistory:
    """Which of its sentence's k slots each row's ancestor wrote at every step, shared by the
    layers' BeamKVCaches: reordering beams rewrites this (N, t) table, not the keys and values.

    Args:
        beams: rows per source sentence (k) once the search has expanded.
    """

    def __init__(self, beams: int) -> None:
        self.beams = beams
        self.slots: Tensor | None = None  # (N, t) long
        self._mask: Tensor | None = None

    def mask(self, rows: int, sources: int, length: int, device: torch.device) -> Tensor:
        """(n, 1, g, length k) bool: the keys each of the g rows per source sees, its
        ancestors' slots and, at the newest step, its own (built once per step for all layers)."""
        if self.slots is None or self.slots.shape[1] < length:
            own = (torch.arange(rows, device=device) % (rows // sources))[:, None]
            self.slots = own if self.slots is None else torch.cat([self.slots, own], dim=1)
            self._mask = None
        if self._mask is None:
            seen = F.one_hot(self.slots, self.beams).bool()  # (N, length, k)
            self._mask = seen.view(sources, rows // sources, 1, length * self.beams).transpose(1, 2)
        return self._mask

    def reorder(self, index: Tensor) -> None:
        """Row i now continues the history of row index[i]."""
        if self.slots is not None:
            self.slots = self.slots.index_select(0, index)
            self._mask = None


class BeamKVCache(_Positions):
    """Self-attention keys and values of a beam search, shape (n, H, t, k, Dh) (keys kept as
    (n, H, Dh, t, k)): step t of source i holds what its k beams computed (slot j from the j-th
    row of the source; the first step, run once per source, fills slot 0). Rows read their own
    history through `mask`; nothing is copied when beams are reordered. One query step at a time.

    Args:
        history: the ancestry table shared by every layer's cache.
    """

    cross = False

    def __init__(self, history: BeamHistory) -> None:
        self.history = history
        self._kt: Tensor | None = None
        self._v: Tensor | None = None
        self._rows = 0
        self.length = 0

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add one step (N, H, 1, Dh) of g = 1 or k rows per source; return all keys/values,
        (n, H, t k, Dh) (keys of a narrower `key_dim` keep their own width)."""
        rows, heads, steps, key_dim = k.shape
        if steps != 1:
            raise ValueError(f"a beam cache takes one step at a time, not {steps}")
        if self._kt is None or self.length == self._v.shape[2]:
            self._grow(k, v)
        sources = self._v.shape[0]
        g = rows // sources
        self._kt[:, :, :, self.length, :g] = k.view(sources, g, heads, key_dim).permute(0, 2, 3, 1)
        self._v[:, :, self.length, :g] = v.view(sources, g, heads, v.shape[3]).transpose(1, 2)
        if g < self._v.shape[3]:
            # The first step (one row per source) leaves slots g..k-1 unwritten; they are masked,
            # but a zero weight times a NaN left in fresh memory is still NaN.
            self._kt[:, :, :, self.length, g:] = 0
            self._v[:, :, self.length, g:] = 0
        self._rows, self.length = rows, self.length + 1
        return self.keys, self.values

    def _grow(self, k: Tensor, v: Tensor) -> None:
        # Not zero-filled (the fill cost 2-3% of a beam search on the small bench preset): every
        # slot is written before it is read (see `append`).
        sources = k.shape[0] if self._v is None else self._v.shape[0]
        capacity = max(16, 2 * self.length)
        beams, heads = self.history.beams, k.shape[1]
        new_kt = k.new_empty(sources, heads, k.shape[3], capacity, beams)
        new_v = v.new_empty(sources, heads, capacity, beams, v.shape[3])
        if self._kt is not None:
            new_kt[:, :, :, : self.length] = self._kt[:, :, :, : self.length]
            new_v[:, :, : self.length] = self._v[:, :, : self.length]
        self._kt, self._v = new_kt, new_v

    @property
    def keys(self) -> Tensor:
        return self._kt[:, :, :, : self.length].flatten(3, 4).transpose(-2, -1)

    @property
    def values(self) -> Tensor:
        return self._v[:, :, : self.length].flatten(2, 3)

    @property
    def mask(self) -> Tensor:
        """(n, 1, g, t k): each row's own history among its sentence's slots."""
        return self.history.mask(self._rows, self._v.shape[0], self.length, self._v.device)

    def reorder(self, index: Tensor) -> None:
        """Keep the sources `index` (sentences leaving the batch). Copies the filled steps only:
        every later step writes all k slots before anything reads them."""
        if self._kt is None:
            return
        if self._kt.requires_grad and torch.is_grad_enabled():  # out= records no gradient
            self._kt, self._v = self._kt.index_select(0, index), self._v.index_select(0, index)
            return
        kt = self._kt.new_empty(len(index), *self._kt.shape[1:])
        v = self._v.new_empty(len(index), *self._v.shape[1:])
        torch.index_select(self._kt[:, :, :, : self.length], 0, index, out=kt[:, :, :, : self.length])
        torch.index_select(self._v[:, :, : self.length], 0, index, out=v[:, :, : self.length])
        self._kt, self._v = kt, v
