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
With `beams` > 1 even the self-attention keys/values stay put: each step's beams write into k
slots of their sentence, and a small table of which slot each row's ancestor wrote (BeamHistory)
becomes the attention mask, so reordering beams copies no keys or values at all.

Keys are stored transposed, (.., Dh, S), and handed out as a transposed view of shape
(.., S, Dh): attention's q @ k^T then reads a plain row-major matrix. On CPU a one-query step's
batched product against a transposed (.., S, Dh) operand ran ~5x slower (0.3 vs 2.4 ms for 628
batches of 4 x 64 by 64 x 26, one thread), 10% of a beam search over Multi30k.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
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
        (n, H, t k, Dh)."""
        rows, heads, steps, head_dim = k.shape
        if steps != 1:
            raise ValueError(f"a beam cache takes one step at a time, not {steps}")
        if self._kt is None or self.length == self._v.shape[2]:
            self._grow(k)
        sources = self._v.shape[0]
        g = rows // sources
        self._kt[:, :, :, self.length, :g] = k.view(sources, g, heads, head_dim).permute(0, 2, 3, 1)
        self._v[:, :, self.length, :g] = v.view(sources, g, heads, head_dim).transpose(1, 2)
        if g < self._v.shape[3]:
            # The first step (one row per source) leaves slots g..k-1 unwritten; they are masked,
            # but a zero weight times a NaN left in fresh memory is still NaN.
            self._kt[:, :, :, self.length, g:] = 0
            self._v[:, :, self.length, g:] = 0
        self._rows, self.length = rows, self.length + 1
        return self.keys, self.values

    def _grow(self, k: Tensor) -> None:
        # Not zero-filled (the fill cost 2-3% of a beam search on the small bench preset): every
        # slot is written before it is read (see `append`).
        sources = k.shape[0] if self._v is None else self._v.shape[0]
        capacity = max(16, 2 * self.length)
        beams, heads, head_dim = self.history.beams, k.shape[1], k.shape[3]
        new_kt = k.new_empty(sources, heads, head_dim, capacity, beams)
        new_v = k.new_empty(sources, heads, capacity, beams, head_dim)
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


@dataclass
class DecoderLayerCache:
    self_attn: KVCache | BeamKVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=lambda: KVCache(cross=True))


@dataclass
class DecoderCache:
    """Per-layer caches of a decoder stack; `offset` is the number of tokens decoded so far.

    With a `history` (beam search: `empty(n, beams=k)`), the self-attention caches are
    BeamKVCaches sharing it.
    """

    layers: list[DecoderLayerCache]
    history: BeamHistory | None = None

    @classmethod
    def empty(cls, num_layers: int, *, beams: int = 1) -> DecoderCache:
        """Caches for `num_layers` layers; `beams` > 1: rows per source share their histories."""
        if beams == 1:
            return cls([DecoderLayerCache() for _ in range(num_layers)])
        history = BeamHistory(beams)
        return cls([DecoderLayerCache(self_attn=BeamKVCache(history)) for _ in range(num_layers)], history)

    @property
    def offset(self) -> int:
        return len(self.layers[0].self_attn)

    def reorder(self, index: Tensor) -> None:
        """Keep the hypothesis rows `index` (repeats allowed) of the self-attention caches.

        Each row must stay with its source sentence (the cross-attention caches, one entry per
        sentence, are left as they are): beam expansion and reordering among a sentence's beams.
        """
        if self.history is not None:
            self.history.reorder(index)
            return
        for layer in self.layers:
            layer.self_attn.reorder(index)

    def select_sources(self, index: Tensor) -> None:
        """Keep the source sentences `index` of the cross-attention caches (sentences leaving the
        batch; with one row per sentence, also any reordering of them)."""
        for layer in self.layers:
            layer.cross_attn.reorder(index)
            if self.history is not None:
                layer.self_attn.reorder(index)
