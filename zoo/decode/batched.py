"""Decoding a list of sequences of any lengths: length-sorted batches, results in input order.

Sorting by length keeps padding (and so wasted decoder work) small; the outputs are put back
in the order the sources came in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from zoo.config import UserError
from zoo.data.batching import token_batches
from zoo.data.seq2seq import Ids, pad
from zoo.data.special import SpecialIds
from zoo.decode.protocol import EncoderDecoder, Hypotheses

Search = Callable[[Tensor, Tensor], Hypotheses]
"""search(src (B, S), positions (B,)) -> Hypotheses: one batch of sources, right-padded, and
each row's position in the input list (for hooks that need per-sequence data)."""


def decode_sorted(
    model: EncoderDecoder,
    sources: Ids | Sequence[Sequence[int]],
    search: Search,
    *,
    special: SpecialIds,
    max_tokens: int,
    append_eos: bool = True,
    keep: Callable[[Hypotheses], list[Any]] = Hypotheses.best,
) -> list[Any]:
    """The best hypothesis of every source (or what `keep` takes of its hypotheses), in input order.

    Args:
        model: the encoder-decoder `search` runs (its device and position table are read).
        sources: id sequences, without EOS when `append_eos`.
        search: decodes one batch (greedy_search, beam_search, sample with their options bound).
        special: the special ids (padding, and the EOS appended to every source).
        max_tokens: source tokens per batch (padding counted), raised to the longest source.
        append_eos: end every source with EOS, as training sources are.
        keep: what to return of a batch's hypotheses, one item a source (`Hypotheses.nbest`: the
            n best with their scores).
    """
    ids = sources if isinstance(sources, Ids) else Ids.from_rows(sources)
    if not len(ids):
        return []
    lengths = ids.lengths + int(append_eos)
    longest = int(lengths.max())
    if longest > model.max_len:
        at = int(lengths.argmax())
        raise UserError(f"source {at} has {longest} tokens, more than the model's max_len {model.max_len}")
    device = next(model.parameters()).device
    outputs: list[Any] = [[] for _ in range(len(ids))]
    for indices in token_batches(lengths, lengths, max(max_tokens, longest), shuffle=False):
        src = pad(ids, indices, special.pad, last=special.eos if append_eos else None)
        positions = torch.from_numpy(indices)
        for i, hyp in zip(indices.tolist(), keep(search(src.to(device), positions.to(device)))):
            outputs[i] = hyp
    return outputs
