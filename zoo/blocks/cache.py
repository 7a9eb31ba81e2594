"""The decoding cache of a decoder stack: one self- and one cross-attention cache per layer.

A cache is an explicit argument of attention, never hidden module state. Each attention path
reads its own kind of cache, one concept per file:

- plain self-attention (one row per source, or beam search reordering rows by copy):
  KVCache, zoo.blocks.kv_cache;
- cross-attention: KVCache(cross=True), filled once from the encoder output, one entry per source
  sentence shared by its rows (MultiHeadAttention serves N query rows over n sources, N / n
  consecutive rows per source), so nothing fixed within a sentence is copied per step;
- beam self-attention (k > 1 beams): BeamKVCache and its BeamHistory, zoo.blocks.beam_cache,
  keys/values shared per sentence and read through the beams' ancestry, so reordering beams
  copies no keys or values.

This module holds the per-decoder container that picks between them and routes beam search's
two kinds of reordering: rows among a sentence's beams (`reorder`) and sentences leaving the
batch (`select_sources`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

from zoo.blocks.beam_cache import BeamHistory, BeamKVCache
from zoo.blocks.kv_cache import KVCache

__all__ = ["BeamHistory", "BeamKVCache", "CausalCache", "DecoderCache", "DecoderLayerCache", "KVCache"]


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


@dataclass
class CausalCache:
    """Per-layer self-attention caches of a decoder-only stack (GPT): no cross-attention, so the
    prompt's keys and values are per row like the generated ones; `offset` counts every cached
    position (left padding included)."""

    layers: list[KVCache]

    @classmethod
    def empty(cls, num_layers: int) -> CausalCache:
        return cls([KVCache() for _ in range(num_layers)])

    @property
    def offset(self) -> int:
        return len(self.layers[0])

    def reorder(self, index: Tensor) -> None:
        """Keep the rows `index` (repeats allowed): beams expanded, reordered or dropped."""
        for layer in self.layers:
            layer.reorder(index)
