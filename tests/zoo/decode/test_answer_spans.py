"""zoo.decode.spans: the n best answer spans equal a brute force over every pair of tokens of every
window; overlapping windows give a span the score of the window that scores it highest; tokens
outside the passage and spans over max_answer_length are never answers."""

from __future__ import annotations

import random

import pytest
import torch

from zoo.decode.spans import Span, best_spans

QUESTION = 4  # [CLS] and the question's tokens, outside the passage


def passage_tokens(num_tokens: int, rng: random.Random) -> list[tuple[int, int]]:
    """Character offsets of a passage's tokens: words of 1-6 characters with a space between,
    and now and then two pieces of one character (as a tokenizer splits some characters), so
    that two token pairs can share one character span."""
    offsets, position = [], 0
    while len(offsets) < num_tokens:
        size = rng.randint(1, 6)
        offsets.append((position, position + size))
        if rng.random() < 0.15:
            offsets.append((position, position + size))
        position += size + 1
    return offsets[:num_tokens]


def windows(passage: list[tuple[int, int]], length: int, stride: int) -> list[list[tuple[int, int] | None]]:
    """Each window as a model reads it: [CLS] question [SEP] (None), a slice of the passage that
    starts `stride` tokens after the last one's, [SEP] (None)."""
    out, begin = [], 0
    while True:
        out.append([None] * QUESTION + passage[begin : begin + length] + [None])
        if begin + length >= len(passage):
            return out
        begin += stride


def brute_force(start, end, offsets, max_answer_length: int, n_best: int) -> list[tuple[int, int, float]]:
    best: dict[tuple[int, int], float] = {}
    for window, window_offsets in enumerate(offsets):
        for i, first in enumerate(window_offsets):
            for j, last in enumerate(window_offsets):
                if first is None or last is None or not 0 <= j - i < max_answer_length:
                    continue
                span = (first[0], last[1])
                best[span] = max(best.get(span, float("-inf")), (start[window, i] + end[window, j]).item())
    ranked = sorted(best.items(), key=lambda item: item[1], reverse=True)[:n_best]
    return [(s, e, score) for (s, e), score in ranked]


def logits(offsets, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random (W, T) logits, T the longest window (shorter ones are padded)."""
    generator = torch.Generator().manual_seed(seed)
    shape = (len(offsets), max(len(o) for o in offsets) + 2)
    return torch.randn(shape, generator=generator) * 3, torch.randn(shape, generator=generator) * 3


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_answer_length, n_best", [(1, 5), (4, 20), (30, 7)])
def test_equals_brute_force_over_all_pairs_of_all_windows(seed, max_answer_length, n_best):
    rng = random.Random(seed)
    offsets = windows(passage_tokens(rng.randint(5, 40), rng), length=12, stride=rng.randint(4, 12))
    start, end = logits(offsets, seed)
    got = best_spans(start, end, offsets, max_answer_length=max_answer_length, n_best=n_best)
    expected = brute_force(start, end, offsets, max_answer_length, n_best)
    assert [(s.start, s.end) for s in got] == [(s, e) for s, e, _ in expected]
    torch.testing.assert_close(torch.tensor([s.score for s in got]), torch.tensor([x for *_, x in expected]))
    for span in got:  # the tokens it names give its characters and its score
        window = offsets[span.window]
        assert (window[span.token_start][0], window[span.token_end][1]) == (span.start, span.end)
        score = start[span.window, span.token_start] + end[span.window, span.token_end]
        assert span.score == pytest.approx(score.item(), abs=1e-5)


def test_overlapping_windows_give_the_span_of_the_window_that_scores_it_highest():
    passage = [(6 * i, 6 * i + 5) for i in range(12)]
    offsets = windows(passage, length=8, stride=4)  # passage tokens 4-7 in both windows
    assert len(offsets) == 2
    for better in (0, 1):
        start, end = torch.zeros(2, 13), torch.zeros(2, 13)
        # passage token 5: position QUESTION + 5 in window 0, QUESTION + 1 in window 1
        positions = [QUESTION + 5, QUESTION + 1]
        for window, boost in ((0, 5.0), (1, 4.0)) if better == 0 else ((0, 4.0), (1, 5.0)):
            start[window, positions[window]] = end[window, positions[window]] = boost
        top = best_spans(start, end, offsets, n_best=3)[0]
        assert (top.start, top.end, top.window, top.score) == (30, 35, better, 10.0)
        assert top.token_start == top.token_end == positions[better]
        assert [(s.start, s.end) for s in best_spans(start, end, offsets, n_best=50)].count((30, 35)) == 1


def test_tokens_outside_the_passage_are_never_answers():
    offsets = [[None, None, (0, 3), (4, 7), None, (8, 9), None]]  # a None inside too
    start, end = torch.zeros(1, 9), torch.zeros(1, 9)
    start[0, [0, 1, 4, 6, 7, 8]] = end[0, [0, 1, 4, 6, 7, 8]] = 100.0  # None and padding
    spans = best_spans(start, end, offsets, n_best=100)
    assert {(s.start, s.end) for s in spans} == {(0, 3), (0, 7), (0, 9), (4, 7), (4, 9), (8, 9)}
    assert all(s.score == 0.0 for s in spans)
    assert best_spans(start, end, [[None] * 7], n_best=5) == []


def test_max_answer_length_is_respected():
    offsets = [[(2 * i, 2 * i + 1) for i in range(10)]]
    start, end = torch.zeros(1, 10), torch.zeros(1, 10)
    start[0, 1], end[0, 8] = 10.0, 10.0  # the best pair is 8 tokens long
    assert best_spans(start[0], end[0], offsets, max_answer_length=8, n_best=1)[0][:3] == (2, 17, 20.0)
    shorter = best_spans(start[0], end[0], offsets, max_answer_length=7, n_best=100)
    assert all(s.token_end - s.token_start < 7 for s in shorter) and len(shorter) == 10 * 7 - 21
    assert max(s.score for s in shorter) == 10.0


def test_fewer_spans_than_asked_and_inputs_checked():
    spans = best_spans(torch.tensor([0.0, 1.0, 2.0]), torch.tensor([0.0, 1.0, 2.0]), [[None, (0, 1), (2, 3)]])
    assert spans == [Span(2, 3, 4.0, 0, 2, 2), Span(0, 3, 3.0, 0, 1, 2), Span(0, 1, 2.0, 0, 1, 1)]
    with pytest.raises(ValueError, match="offset lists"):
        best_spans(torch.zeros(2, 3), torch.zeros(2, 3), [[None] * 3])
    with pytest.raises(ValueError, match="4 offsets for 3 logits"):
        best_spans(torch.zeros(1, 3), torch.zeros(1, 3), [[None] * 4])
    with pytest.raises(ValueError, match="NaN"):
        best_spans(torch.full((1, 3), float("nan")), torch.zeros(1, 3), [[None] * 3])
