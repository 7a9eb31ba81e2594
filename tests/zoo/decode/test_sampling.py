import torch

from zoo.data.special import SPECIAL_IDS
from zoo.decode.greedy import greedy_search
from zoo.decode.sampling import filter_logprobs, sample

PAD, UNK, BOS, EOS = SPECIAL_IDS.pad, SPECIAL_IDS.unk, SPECIAL_IDS.bos, SPECIAL_IDS.eos
SPECIALS = dict(special=SPECIAL_IDS)


def draw(model, src, seed: int, **kwargs):
    return sample(
        model, src, generator=torch.Generator().manual_seed(seed), max_len_b=8, **SPECIALS, **kwargs
    )


def test_seeded_sampling_is_reproducible_and_seed_dependent(model, src):
    first, again, other = draw(model, src, 0), draw(model, src, 0), draw(model, src, 1)
    assert torch.equal(first.tokens, again.tokens)
    assert not torch.equal(first.tokens, other.tokens)


def test_cached_equals_uncached(model, src):
    assert torch.equal(
        draw(model, src, 5, temperature=1.5).tokens,
        draw(model, src, 5, temperature=1.5, use_cache=False).tokens,
    )


def test_top_k_one_is_greedy(model, src):
    assert draw(model, src, 2, top_k=1).best() == greedy_search(model, src, max_len_b=8, **SPECIALS).best()


def test_scores_are_model_logprobs(model, src, score):
    out = draw(model, src, 3, temperature=0.7, top_p=0.9)
    for i, hyp in enumerate(out.best()):
        sentence = src[i][src[i] != 0]
        assert abs(out.scores[i, 0].item() - score(model, sentence, [hyp])[0]) < 1e-4


def test_filters_keep_the_right_ids():
    logprobs = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()

    def kept(**kw):
        return torch.isfinite(filter_logprobs(logprobs, **kw))[0].tolist()

    assert kept(top_k=2) == [True, True, False, False]
    assert kept(top_p=0.75) == [True, True, False, False]  # 0.5 + 0.3 reaches 0.75
    assert kept(top_p=0.8) == [True, True, False, False]
    assert kept(top_p=0.81) == [True, True, True, False]
    probs = filter_logprobs(logprobs, temperature=2.0).softmax(-1)
    torch.testing.assert_close(probs, logprobs.div(2).softmax(-1))
    assert probs[0, 0] < 0.5  # a higher temperature flattens
