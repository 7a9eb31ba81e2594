"""Several encoder-decoders over one vocabulary decoded as one model: at every step the mean of
their next-token probabilities (fairseq's checkpoint ensembles, `--path a.pt:b.pt`), so greedy
search, beam search and sampling (zoo.decode) run on an ensemble unchanged.

The ensemble answers the decoders' protocol (zoo.decode.protocol): its memory is the members'
memories side by side along the feature axis, so that the decoders' row selections apply to all
of them at once, and its cache holds one cache per member.

Shape key: B sequences, N rows, S source length, T target length, V vocabulary size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from zoo.decode.protocol import Cache
from zoo.models.ensemble_mean import log_mean_probability


class EnsembleCache:
    """One cache per member, reordered and pruned together."""

    def __init__(self, caches: list[Cache]) -> None:
        self.caches = caches

    def reorder(self, index: Tensor) -> None:
        for cache in self.caches:
            cache.reorder(index)

    def select_sources(self, index: Tensor) -> None:
        for cache in self.caches:
            cache.select_sources(index)


class Seq2SeqEnsemble(nn.Module):
    """Members with the same source and target vocabularies and padding id; decode() gives the
    log of their mean next-token probability (a log-probability already: log-softmax leaves it).

    Args:
        members: the encoder-decoders (zoo.models.seq2seq.Seq2Seq or any with its interface).
    """

    def __init__(self, members: Sequence[nn.Module]) -> None:
        super().__init__()
        if len(members) < 2:
            raise ValueError(f"an ensemble needs at least two members, not {len(members)}")
        self.members = nn.ModuleList(members)
        self.max_len = min(member.max_len for member in members)
        self.pad_idx = members[0].pad_idx
        self.widths: list[int] = []  # each member's memory width, set by encode

    def encode(self, src: Tensor, source: Any = None) -> tuple[Tensor, Tensor]:
        """src (B, S) -> the members' memories concatenated (B, S, sum of widths) and the padding
        mask (the same for every member: it is the source's)."""
        encoded = [member.encode(src, source) for member in self.members]
        self.widths = [memory.shape[-1] for memory, _ in encoded]
        return torch.cat([memory for memory, _ in encoded], dim=-1), encoded[0][1]

    def decode(self, tgt_in: Tensor, memory: Tensor | None, memory_mask: Tensor, cache: Any = None) -> Tensor:
        """tgt_in (N, T) -> log of the members' mean next-token probabilities (N, T, V), float32."""
        memories = memory.split(self.widths, dim=-1) if memory is not None else [None] * len(self.members)
        caches = cache.caches if cache is not None else [None] * len(self.members)
        logits = [
            member.decode(tgt_in, part, memory_mask, member_cache)
            for member, part, member_cache in zip(self.members, memories, caches)
        ]
        return log_mean_probability(logits)

    def new_cache(self, beams: int = 1) -> EnsembleCache:
        return EnsembleCache([member.new_cache(beams) for member in self.members])

    def forward(self, src: Tensor, tgt_in: Tensor, source: Any = None) -> Tensor:
        """Teacher-forced: the log of the members' mean probabilities of the next tokens (B, T, V)."""
        memory, memory_mask = self.encode(src, source)
        return self.decode(tgt_in, memory, memory_mask)
