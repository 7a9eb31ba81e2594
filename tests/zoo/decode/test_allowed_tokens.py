"""The allowed_tokens hook: it restricts every search to the sequences it allows, and nothing else."""

import itertools

import pytest
import torch

from zoo.data.special import SPECIAL_IDS
from zoo.decode import beam_search, greedy_search, length_penalty, sample

EOS, UNK = SPECIAL_IDS.eos, SPECIAL_IDS.unk
SPECIALS = dict(special=SPECIAL_IDS)
PATTERN = [7, 5, 7, 9, 11]


def forcing(pattern: list[int], vocab: int):
    """Allows only pattern[t] at step t, then only EOS."""

    def allowed_tokens(sequences: torch.Tensor, prefixes: torch.Tensor) -> torch.Tensor:
        mask = torch.zeros(prefixes.shape[0], vocab, dtype=torch.bool)
        step = prefixes.shape[1]
        mask[:, pattern[step] if step < len(pattern) else EOS] = True
        return mask

    return allowed_tokens


def searches():
    return {
        "greedy": lambda model, src, **kw: greedy_search(model, src, **kw),
        "beam": lambda model, src, **kw: beam_search(model, src, beam_size=3, n_best=2, **kw),
        "sample": lambda model, src, **kw: sample(
            model, src, generator=torch.Generator().manual_seed(0), temperature=2.0, **kw
        ),
    }


@pytest.mark.parametrize("name", ["greedy", "beam", "sample"])
def test_a_forced_pattern_comes_out_exactly(name, model, src):
    out = searches()[name](model, src, max_len_b=10, allowed_tokens=forcing(PATTERN, 19), **SPECIALS)
    assert out.best() == [PATTERN] * src.shape[0]


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_with_hook_equals_exhaustive_search_over_allowed_sequences(alpha, make_model, score):
    """No token may repeat the one before it: the wide beam must find the n best of exactly the
    sequences (of at most 3 tokens) that obey the rule, with their model scores."""
    model = make_model(vocab=6, seed=1)
    src = torch.tensor([[4, 5, 4]])

    def no_repeat(sequences, prefixes):
        mask = torch.ones(prefixes.shape[0], 6, dtype=torch.bool)
        if prefixes.shape[1]:
            mask[torch.arange(prefixes.shape[0]), prefixes[:, -1]] = False
        return mask

    words = [UNK, 4, 5]
    every = [
        list(ids)
        for length in range(4)
        for ids in itertools.product(words, repeat=length)
        if all(a != b for a, b in zip(ids, ids[1:]))
    ]
    logprobs = score(model, src[0], every)
    scored = sorted(
        ((lp / length_penalty(len(ids) + 1, alpha), ids) for lp, ids in zip(logprobs, every)),
        key=lambda pair: -pair[0],
    )
    out = beam_search(
        model,
        src,
        beam_size=40,
        alpha=alpha,
        max_len_a=0.0,
        max_len_b=3,
        n_best=5,
        allowed_tokens=no_repeat,
        **SPECIALS,
    )
    found = out.nbest()[0]
    assert [ids for ids, _ in found] == [ids for _, ids in scored[:5]]
    torch.testing.assert_close(torch.tensor([s for _, s in found]), torch.tensor([s for s, _ in scored[:5]]))


def test_the_hook_sees_each_rows_sequence_and_generated_prefix(model, src):
    """Sequence i must emit 4 + i, three times: each row's own rule, from its own prefix."""
    seen = []

    def per_sequence(sequences, prefixes):
        seen.append(prefixes.clone())
        mask = torch.zeros(prefixes.shape[0], 19, dtype=torch.bool)
        done = prefixes.shape[1] >= 3
        mask[torch.arange(prefixes.shape[0]), EOS if done else 4 + sequences] = True
        return mask

    out = beam_search(model, src, beam_size=2, max_len_b=5, allowed_tokens=per_sequence, **SPECIALS)
    assert out.best() == [[4 + i] * 3 for i in range(src.shape[0])]
    assert seen[0].shape == (3, 0)  # no BOS in the prefixes


def test_at_the_length_limit_eos_wins_over_the_hook(model, src):
    def never_end(sequences, prefixes):
        return torch.arange(19) != EOS

    out = greedy_search(
        model,
        src,
        max_len_a=2.0,
        max_len_b=1,
        allowed_tokens=lambda s, p: never_end(s, p).expand(p.shape[0], -1),
        **SPECIALS,
    )
    lengths = (src != SPECIAL_IDS.pad).sum(1)
    assert [len(h) for h in out.best()] == (2 * lengths + 1).tolist()


def test_a_hook_that_allows_nothing_is_an_error(model, src):
    def nothing(sequences, prefixes):
        return torch.zeros(prefixes.shape[0], 19, dtype=torch.bool)

    with pytest.raises(ValueError, match="no token"):
        greedy_search(model, src, allowed_tokens=nothing, **SPECIALS)
