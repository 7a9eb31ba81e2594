"""CKY over span scores: the best binary bracketing of a sentence, knowing nothing of trees.

A bracketing of n items (fenceposts 0..n) is a set of spans (i, j), i < j, that nest: the whole
sentence (0, n), every single item (i, i + 1), and for each longer span one split point k with
(i, k) and (k, j) in the set (2n - 1 spans). Given a score for every span and label, the best
bracketing maximises the sum over its spans of the span's best label score:

    chart(i, i+1) = best(i, i+1);  chart(i, j) = best(i, j) + max_k chart(i, k) + chart(k, j)

Chart parsers (Stern et al., 2017; Kitaev & Klein, 2018) score a tree this way, with an empty
label fixed at score 0 for spans that are no constituent; loss-augmented decoding is the same
search after the caller adds the Hamming cost to the scores. The chart is filled one span length
at a time for all start positions and all sentences at once; only the backtrace is per sentence.

Shape key: B sentences, n longest sentence, L labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

Span = tuple[int, int, int]


@dataclass
class Bracketing:
    """spans: per sentence, its (start, end, label) spans in pre-order (parents before children,
    left before right); scores: (B,) their summed scores, differentiable with respect to the
    input scores."""

    spans: list[list[Span]]
    scores: Tensor


def span_sum(scores: Tensor, spans: list[list[Span]]) -> Tensor:
    """(B,) the summed scores of each sentence's (start, end, label) spans; scores (B, n+1, n+1, L)."""
    rows = [(b, i, j, label) for b, sentence in enumerate(spans) for i, j, label in sentence]
    if not rows:
        return scores.new_zeros(len(spans))
    b, i, j, label = torch.tensor(rows, dtype=torch.long, device=scores.device).unbind(1)
    return scores.new_zeros(len(spans)).index_add(0, b, scores[b, i, j, label])


@torch.no_grad()
def _fill(best: Tensor) -> Tensor:
    """The chart's split points (B, n+1, n+1): split[b, i, j] = the best k of span (i, j)."""
    size = best.shape[1]
    n = size - 1
    chart = torch.zeros_like(best)
    split = torch.zeros(best.shape, dtype=torch.long, device=best.device)
    starts = torch.arange(n, device=best.device)
    chart[:, starts, starts + 1] = best[:, starts, starts + 1]
    for width in range(2, n + 1):
        i = starts[: n - width + 1, None]  # (spans, 1)
        k = i + torch.arange(1, width, device=best.device)  # (spans, width - 1) split points
        inside = chart[:, i, k] + chart[:, k, i + width]  # (B, spans, width - 1)
        value, arg = inside.max(dim=-1)
        chart[:, i[:, 0], i[:, 0] + width] = best[:, i[:, 0], i[:, 0] + width] + value
        split[:, i[:, 0], i[:, 0] + width] = i[:, 0] + 1 + arg
    return split


def cky(scores: Tensor, lengths: Tensor | list[int] | None = None) -> Bracketing:
    """The best binary bracketing of each sentence and its labels.

    Args:
        scores: (B, n+1, n+1, L) score of span (i, j) with label l (entries with i >= j or
            j > length are ignored); L = 1 for unlabelled spans.
        lengths: (B,) items per sentence (default: n for all).

    Returns:
        Bracketing: each span's label is its best-scoring one; the score of a sentence is the
        sum of its chosen spans' scores (gathered from `scores`, so gradients flow to them).
    """
    batch, size = scores.shape[0], scores.shape[1]
    lengths = [size - 1] * batch if lengths is None else [int(x) for x in lengths]
    best, labels = scores.detach().float().max(dim=-1)
    split, labels = _fill(best).tolist(), labels.tolist()
    spans = []
    for b, n in enumerate(lengths):
        out, todo = [], [(0, n)] if n > 0 else []
        while todo:
            i, j = todo.pop()
            out.append((i, j, labels[b][i][j]))
            if j - i > 1:
                k = split[b][i][j]
                todo += [(k, j), (i, k)]  # left popped first: pre-order
        spans.append(out)
    return Bracketing(spans, span_sum(scores, spans))
