"""Answer spans from start and end logits (extractive question answering, as BERT's SQuAD head
scores them): the n best character spans of a passage, over the windows a long passage was cut
into (a document stride).

A span is a pair of tokens (start, end) with end >= start, both in the passage, at most
`max_answer_length` tokens long, scored start logit + end logit, as Hugging Face's
`postprocess_qa_predictions` scores them; it maps to characters through the tokens' offsets,
(first character of the start token, one past the last of the end token). Where windows
overlap, a span found in several keeps the score of the window that scores it highest.

One departure from Hugging Face: it pairs only the n best start and the n best end tokens
of each window, which can miss the best valid span when those tokens lie in the question or
too far apart; here every valid pair is scored, so the result is the exact n best. (Its
"no answer" option, SQuAD 2's null score, is not part of this decoder.)

Shape key: W windows, T tokens of a window, K span lengths (min(max_answer_length, T)).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

Offsets = Sequence[tuple[int, int] | None]  # a window's tokens -> characters; None outside the passage


class Span(NamedTuple):
    """An answer: characters [start, end) of the context, its score and where it scored it."""

    start: int
    end: int
    score: float
    window: int  # the window that scores it highest
    token_start: int  # in that window
    token_end: int  # inclusive


def best_spans(
    start_logits: Tensor,
    end_logits: Tensor,
    offsets: Sequence[Offsets],
    *,
    max_answer_length: int = 30,
    n_best: int = 20,
) -> list[Span]:
    """The `n_best` highest-scoring distinct character spans, best first (fewer when fewer exist).

    Args:
        start_logits, end_logits: (W, T), or (T,) for one window.
        offsets: per window, each token's (start, end) characters in the context, None where the
            token is not the passage's (question, [CLS], [SEP], padding: set them None, as
            Hugging Face's prepare_validation_features does). A window's list may be shorter than
            T: the tokens past its end are padding.
        max_answer_length: the longest span in tokens. n_best: how many spans to return.
    """
    if start_logits.dim() == 1:
        start_logits, end_logits = start_logits[None], end_logits[None]
    _check(start_logits, end_logits, offsets, max_answer_length, n_best)
    # Decoding is bookkeeping over a few thousand pairs a window: on the CPU, in float32.
    start_logits, end_logits = start_logits.detach().float().cpu(), end_logits.detach().float().cpu()
    scores, length = _scores(start_logits, end_logits, offsets, max_answer_length)
    ranked, order = scores.flatten(1).sort(dim=1, descending=True)
    found = (ranked > float("-inf")).sum(dim=1).tolist()
    best: dict[tuple[int, int], Span] = {}
    for window in range(len(offsets)):
        ranked_pairs = _pairs(ranked[window], order[window], found[window], length)
        for span in _window_spans(ranked_pairs, offsets[window], window, n_best):
            if (span.start, span.end) not in best or span.score > best[span.start, span.end].score:
                best[span.start, span.end] = span
    return sorted(best.values(), key=lambda span: span.score, reverse=True)[:n_best]


def _check(start: Tensor, end: Tensor, offsets: Sequence[Offsets], max_length: int, n_best: int) -> None:
    if start.shape != end.shape or start.dim() != 2:
        raise ValueError(f"start and end logits must both be (W, T), got {start.shape} and {end.shape}")
    if len(offsets) != start.shape[0]:
        raise ValueError(f"{len(offsets)} offset lists for {start.shape[0]} windows")
    longest = max((len(o) for o in offsets), default=0)
    if longest > start.shape[1]:
        raise ValueError(f"a window has {longest} offsets for {start.shape[1]} logits")
    if start.isnan().any() or end.isnan().any():
        raise ValueError("start or end logits hold NaN")
    if max_length < 1 or n_best < 1:
        raise ValueError(f"max_answer_length ({max_length}) and n_best ({n_best}) must be at least 1")


def _scores(start: Tensor, end: Tensor, offsets: Sequence[Offsets], max_length: int) -> tuple[Tensor, int]:
    """Scores (W, T, K) of the span from token t to token t + k, -inf where it is not allowed
    (an end past the window or outside the passage); and K. Only the K diagonals of the (T, T)
    pair matrix that lengths allow are built."""
    num_tokens = start.shape[1]
    length = min(max_length, num_tokens)
    in_passage = torch.tensor(
        [[o is not None for o in window] + [False] * (num_tokens - len(window)) for window in offsets],
        dtype=torch.bool,
    ).view(len(offsets), num_tokens)
    last = torch.arange(num_tokens)[:, None] + torch.arange(length)  # (T, K): the end token
    inside = last < num_tokens
    last = last.clamp(max=num_tokens - 1)
    allowed = inside & in_passage[:, :, None] & in_passage[:, last]
    return (start[:, :, None] + end[:, last]).masked_fill(~allowed, float("-inf")), length


def _pairs(
    ranked: Tensor, order: Tensor, count: int, length: int, chunk: int = 64
) -> Iterator[tuple[float, int, int]]:
    """(score, start token, end token) of a window's allowed spans, best first; read in chunks,
    since a window usually needs only its first few."""
    for begin in range(0, count, chunk):
        scores = ranked[begin : min(begin + chunk, count)].tolist()
        for score, index in zip(scores, order[begin : begin + len(scores)].tolist()):
            first, extra = divmod(index, length)
            yield score, first, first + extra


def _window_spans(
    pairs: Iterator[tuple[float, int, int]], offsets: Offsets, window: int, n_best: int
) -> Iterator[Span]:
    """The window's best `n_best` distinct character spans (two token pairs can share one when
    tokens share characters): enough, since a span beyond them cannot be in the overall best."""
    seen: set[tuple[int, int]] = set()
    for score, first, last in pairs:
        characters = (offsets[first][0], offsets[last][1])
        if characters in seen:
            continue
        seen.add(characters)
        yield Span(*characters, score, window, first, last)
        if len(seen) == n_best:
            return
