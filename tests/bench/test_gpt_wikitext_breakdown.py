"""bench.gpt_wikitext_breakdown: tokens assigned to <unk>, headings or the rest by their
characters, and the parts' sums and bounds."""

from __future__ import annotations

import math

import pytest
import torch

from bench.gpt_wikitext_breakdown import breakdown, part_of_tokens


def test_tokens_take_the_part_their_characters_overlap():
    text = " = Title = \nThe <unk> of it.\n == History == \nMore."
    words = ["= Title =", "The", " <", "unk", "> of", " it.", "== History ==", "More."]
    offsets, at = [], 0
    for word in words:
        start = text.index(word, at)
        offsets.append((start, start + len(word)))
        at = start + len(word)
    assert part_of_tokens(text, offsets) == [
        "headings", "rest", "<unk>", "<unk>", "<unk>", "rest", "headings", "rest",
    ]  # fmt: skip


def test_parts_sum_to_the_whole_and_bound_the_perplexity():
    nll = torch.tensor([1.0, 4.0, 2.0, 3.0], dtype=torch.float64)
    rows = {r["part"]: r for r in breakdown(nll, ["rest", "<unk>", "headings", "rest"], words=2)}
    assert sum(rows[p]["nll"] for p in ("<unk>", "headings", "rest")) == rows["all"]["nll"] == 10.0
    assert rows["rest"]["nats_per_token"] == 2.0 and rows["<unk>"]["nll_share"] == 0.4
    assert rows["<unk>"]["word_ppl_without"] == pytest.approx(math.exp(6.0 / 2))
    assert rows["all"]["word_ppl_without"] is None
