import torch

from zoo.data.special import SPECIAL_IDS
from zoo.decode.greedy import greedy_search

PAD, UNK, BOS, EOS = SPECIAL_IDS.pad, SPECIAL_IDS.unk, SPECIAL_IDS.bos, SPECIAL_IDS.eos
SPECIALS = dict(special=SPECIAL_IDS)


@torch.no_grad()
def reference_greedy(model, src: torch.Tensor, max_tokens: int) -> list[int]:
    """Argmax over a full teacher-forced forward of the prefix, one sentence at a time."""
    ids: list[int] = []
    while len(ids) < max_tokens:
        logprobs = model(src[None], torch.tensor([[BOS] + ids]))[0, -1]
        logprobs[[PAD, BOS]] = float("-inf")
        token = int(logprobs.argmax())
        if token == EOS:
            break
        ids.append(token)
    return ids


def test_greedy_equals_step_by_step_reference(model, src, score):
    out = greedy_search(model, src, max_len_b=5, **SPECIALS)
    lengths = (src != PAD).sum(1).tolist()
    for i, hyp in enumerate(out.best()):
        sentence = src[i, : lengths[i]]
        assert hyp == reference_greedy(model, sentence, lengths[i] + 5)
        assert abs(out.scores[i, 0].item() - score(model, sentence, [hyp])[0]) < 1e-4


def test_cached_equals_uncached(model, src):
    cached = greedy_search(model, src, max_len_b=8, **SPECIALS)
    uncached = greedy_search(model, src, max_len_b=8, use_cache=False, **SPECIALS)
    assert torch.equal(cached.tokens, uncached.tokens)
    torch.testing.assert_close(cached.scores, uncached.scores)


def test_length_limit_forces_eos(model, src):
    out = greedy_search(model, src, max_len_b=0, **SPECIALS)
    lengths = (src != PAD).sum(1)
    for i, hyp in enumerate(out.best()):
        assert len(hyp) <= lengths[i]
    assert ((out.tokens == EOS).sum(-1) == 1).all()  # every hypothesis ends, once


def test_finished_rows_leave_the_batch(model, src):
    """Sentences stop at their own limits (6, 4, 2 source tokens): the decoder sees fewer rows."""
    rows = []
    model.decoder.register_forward_pre_hook(lambda module, args: rows.append(args[0].shape[0]))
    out = greedy_search(model, src, max_len_b=0, **SPECIALS)
    assert rows == sorted(rows, reverse=True) and rows[0] == 3 and rows[-1] == 1
    assert out.best() == [
        greedy_search(model, src[i : i + 1], max_len_b=0, **SPECIALS).best()[0] for i in range(3)
    ]
