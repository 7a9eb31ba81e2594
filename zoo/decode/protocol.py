"""What the decoders need from a model, and what they return.

Any encoder-decoder that encodes a source once and decodes target tokens against it, optionally
through a reorderable key/value cache, can be decoded by greedy search, beam search and sampling
(translation and constituency parsing share them).

Shape key: B sequences, N hypotheses per sequence, L hypothesis length, S source length,
V vocabulary size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from torch import Tensor


class Cache(Protocol):
    """Per-row state (self-attention keys/values) and per-source state (cross-attention keys and
    values), the rows of a source consecutive and equally many (beam search's beams)."""

    def reorder(self, index: Tensor) -> None:
        """Keep the rows `index` (in that order, repeats allowed), each within its source."""

    def select_sources(self, index: Tensor) -> None:
        """Keep the sources `index` (sequences leaving the batch)."""


class EncoderDecoder(Protocol):
    max_len: int  # positions the target embedding covers: decoding stops before it

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S) -> memory (B, S, D) and a bool memory mask broadcastable to (B, 1, 1, S)."""

    def decode(
        self, tgt_in: Tensor, memory: Tensor | None, memory_mask: Tensor, cache: Cache | None = None
    ) -> Tensor:
        """Target ids (N, T) -> next-token logits (N, T, V), N = g B: g consecutive rows per
        source share its memory (B, S, D), mask and cross-attention cache.

        Without a cache `tgt_in` is the whole prefix; with one it holds only the new tokens, and
        `memory` is needed only on the first call (may be None afterwards).
        """

    def new_cache(self, beams: int = 1) -> Cache:
        """An empty cache for one decoding run that keeps `beams` rows per source."""


class BoundInputs:
    """A model whose `encode` takes more than the source ids (a BERT's word pieces, source
    features), with those inputs bound for one batch: the decoders only ever call encode(src).

    Args:
        model: the encoder-decoder, its encode(src, *inputs).
        inputs: the batch's extra encoder inputs, rows in the order of the `src` given to the search.
    """

    def __init__(self, model: EncoderDecoder, *inputs: Tensor) -> None:
        self.model, self.inputs, self.max_len = model, inputs, model.max_len

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        return self.model.encode(src, *self.inputs)

    def decode(
        self, tgt_in: Tensor, memory: Tensor | None, memory_mask: Tensor, cache: Cache | None = None
    ) -> Tensor:
        return self.model.decode(tgt_in, memory, memory_mask, cache)

    def new_cache(self, beams: int = 1) -> Cache:
        return self.model.new_cache(beams)


@dataclass
class Hypotheses:
    """Decoded outputs, best first per sequence.

    tokens: (B, N, L) generated ids without BOS; each ends with EOS, then padding.
    scores: (B, N) the search's objective: summed log-probabilities for greedy search and
        sampling, length-normalised ones for beam search.
    eos_idx: the end-of-sequence id (to cut the hypotheses).
    """

    tokens: Tensor
    scores: Tensor
    eos_idx: int

    def best(self) -> list[list[int]]:
        """The top hypothesis of each sequence as a list of ids, EOS and padding removed."""
        return [nbest[0][0] for nbest in self.nbest()]

    def nbest(self) -> list[list[tuple[list[int], float]]]:
        """Per sequence, its hypotheses as (ids without EOS, score), best first."""
        out = []
        for rows, scores in zip(self.tokens.tolist(), self.scores.tolist()):
            out.append([(self._cut(ids), score) for ids, score in zip(rows, scores)])
        return out

    def _cut(self, ids: list[int]) -> list[int]:
        return ids[: ids.index(self.eos_idx)] if self.eos_idx in ids else ids
