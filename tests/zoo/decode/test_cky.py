"""CKY equals brute force over every binary bracketing, and its score is its spans' sum."""

from __future__ import annotations

import functools

import pytest
import torch

from zoo.decode.cky import cky, span_sum


@functools.cache
def bracketings(i: int, j: int) -> list[list[tuple[int, int]]]:
    """Every binary bracketing of items i..j as span lists."""
    if j - i == 1:
        return [[(i, j)]]
    return [
        [(i, j), *left, *right]
        for k in range(i + 1, j)
        for left in bracketings(i, k)
        for right in bracketings(k, j)
    ]


def brute_force(scores: torch.Tensor, n: int) -> float:
    best = scores.max(dim=-1).values
    return max(sum(best[i, j].item() for i, j in spans) for spans in bracketings(0, n))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_cky_equals_brute_force_and_sums_its_spans(n: int) -> None:
    generator = torch.Generator().manual_seed(n)
    for _ in range(5):
        scores = torch.randn(1, n + 1, n + 1, 3, generator=generator, dtype=torch.float64)
        result = cky(scores)
        spans = result.spans[0]
        assert len(spans) == 2 * n - 1
        assert sorted((i, j) for i, j, _ in spans) in [sorted(s) for s in bracketings(0, n)]
        assert result.scores.item() == pytest.approx(brute_force(scores[0], n))
        assert result.scores.item() == pytest.approx(
            sum(scores[0, i, j, label].item() for i, j, label in spans)
        )
        assert all(label == scores[0, i, j].argmax().item() for i, j, label in spans)


def test_batched_sentences_of_different_lengths_equal_one_at_a_time() -> None:
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(4, 8, 8, 2, generator=generator)
    lengths = [7, 3, 1, 5]
    batched = cky(scores, lengths)
    for b, n in enumerate(lengths):
        alone = cky(scores[b : b + 1, : n + 1, : n + 1], [n])
        assert batched.spans[b] == alone.spans[0]
        assert batched.scores[b].item() == pytest.approx(alone.scores.item())


def test_pre_order_and_gradient_reaches_the_chosen_spans() -> None:
    scores = torch.randn(1, 6, 6, 2, generator=torch.Generator().manual_seed(1), requires_grad=True)
    result = cky(scores)
    assert result.spans[0][0][:2] == (0, 5)  # the root first
    result.scores.sum().backward()
    assert scores.grad.sum().item() == 9  # 2n - 1 spans, one label each
    assert torch.equal(span_sum(scores, result.spans), result.scores)
