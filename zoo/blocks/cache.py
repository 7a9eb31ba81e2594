"""Key/value caches for incremental decoding.

A cache is an explicit argument of attention, never hidden module state. Self-attention caches
grow by one step at a time into a preallocated buffer (doubling when full), so a decoding step
costs O(1) copies instead of re-concatenating the whole history. Cross-attention caches are filled
once from the encoder output and reused. Both can be reordered for beam search.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

    def set(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store fixed keys/values (cross-attention over the encoder output)."""
        self._k, self._v, self.length = k, v, k.shape[2]
        return k, v

    @property
    def keys(self) -> Tensor:
        return self._k[:, :, :self.length]

    @property
    def values(self) -> Tensor:
        return self._v[:, :, :self.length]

    def reorder(self, index: Tensor) -> None:
        """Select batch rows (beam search: keep the surviving hypotheses' histories)."""
        if self._k is not None:
            self._k = self._k.index_select(0, index)
            self._v = self._v.index_select(0, index)


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
        for layer in self.layers:
            layer.self_attn.reorder(index)
            layer.cross_attn.reorder(index)
