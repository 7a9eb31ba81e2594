"""zoo.decode.prefix: every search begins each output with its prefix; a prefix taken from the free
output changes nothing (greedy), an empty prefix leaves its row free, and the forced tokens are
scored as part of the hypothesis."""

from __future__ import annotations

import pytest
import torch

from zoo.data.special import SPECIAL_IDS
from zoo.decode import beam_search, greedy_search, sample
from zoo.decode.prefix import ForcedPrefixes

VOCAB = 19
LIMITS = dict(special=SPECIAL_IDS, max_len_b=8)


def run(search: str, model, src, **kwargs):
    if search == "greedy":
        return greedy_search(model, src, **LIMITS, **kwargs)
    if search == "beam":
        return beam_search(model, src, beam_size=3, alpha=0.0, **LIMITS, **kwargs)
    return sample(model, src, generator=torch.Generator().manual_seed(0), top_k=5, **LIMITS, **kwargs)


@pytest.mark.parametrize("search", ["greedy", "beam", "sample"])
@torch.no_grad()
def test_outputs_begin_with_their_prefix_and_an_empty_prefix_is_free(model, src, search):
    prefixes = [[5, 6, 7], [], [9]]
    hook = ForcedPrefixes(prefixes, VOCAB).hook(torch.arange(len(prefixes)))
    forced = run(search, model, src, allowed_tokens=hook).best()
    for ids, prefix in zip(forced, prefixes):
        assert ids[: len(prefix)] == prefix
    if search != "sample":  # a draw depends on the other rows' draws from the shared stream
        assert forced[1] == run(search, model, src).best()[1]


@torch.no_grad()
def test_a_prefix_of_the_free_greedy_output_changes_nothing(model, src):
    free = greedy_search(model, src, **LIMITS).best()
    prefixes = [ids[:k] for ids, k in zip(free, (2, 1, 3))]
    hook = ForcedPrefixes(prefixes, VOCAB).hook(torch.arange(len(prefixes)))
    assert greedy_search(model, src, allowed_tokens=hook, **LIMITS).best() == free


@torch.no_grad()
def test_the_forced_tokens_are_scored(model, src, score):
    prefixes = [[5, 6, 7], [8], [9, 9]]
    hook = ForcedPrefixes(prefixes, VOCAB).hook(torch.arange(len(prefixes)))
    out = greedy_search(model, src, allowed_tokens=hook, **LIMITS)
    for row, ids in enumerate(out.best()):
        assert out.scores[row, 0].item() == pytest.approx(
            score(model, src[row : row + 1], [ids])[0], abs=1e-4
        )


def test_the_hook_follows_the_batch_positions():
    """decode_sorted hands a search its inputs in length order: row i of the batch is input positions[i]."""
    hook = ForcedPrefixes([[4], [5, 6]], VOCAB).hook(torch.tensor([1, 0]))
    first = hook(torch.tensor([0, 1]), torch.zeros(2, 0, dtype=torch.long))
    assert first.sum(dim=1).tolist() == [1, 1] and first[0, 5] and first[1, 4]
    second = hook(torch.tensor([0, 1]), torch.zeros(2, 1, dtype=torch.long))
    assert second[0].sum() == 1 and second[0, 6] and second[1].all()
    assert hook(torch.tensor([0, 1]), torch.zeros(2, 2, dtype=torch.long)) is None  # past every prefix: free
