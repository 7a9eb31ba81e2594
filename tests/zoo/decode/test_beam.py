import itertools
from unittest.mock import patch

import pytest
import torch

from zoo.data.special import SPECIAL_IDS
from zoo.decode.beam import beam_search, length_penalty
from zoo.decode.greedy import greedy_search
from zoo.decode.state import DecodingState

PAD, UNK, BOS, EOS = SPECIAL_IDS.pad, SPECIAL_IDS.unk, SPECIAL_IDS.bos, SPECIAL_IDS.eos
SPECIALS = dict(special=SPECIAL_IDS)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_wide_beam_equals_exhaustive_search(alpha, make_model, score):
    """Vocabulary of 6: pad, unk, bos, eos and two words, so unk + two words can be generated.
    Hypotheses of at most 3 tokens: 1 + 3 + 9 + 27 = 40 of them. A beam of 40 (wider than the
    vocabulary and than the 36 candidates of any step) must find the exhaustive n-best."""
    model = make_model(vocab=6, seed=1)
    src = torch.tensor([[4, 5, 4]])
    words = [UNK, 4, 5]
    every = [list(ids) for length in range(4) for ids in itertools.product(words, repeat=length)]
    logprobs = score(model, src[0], every)
    scored = sorted(
        ((lp / length_penalty(len(ids) + 1, alpha), ids) for lp, ids in zip(logprobs, every)),
        key=lambda pair: -pair[0],
    )

    out = beam_search(model, src, beam_size=40, alpha=alpha, max_len_b=0, n_best=5, **SPECIALS)
    found = out.nbest()[0]
    assert [ids for ids, _ in found] == [ids for _, ids in scored[:5]]
    torch.testing.assert_close(torch.tensor([s for _, s in found]), torch.tensor([s for s, _ in scored[:5]]))


def test_cached_equals_uncached(model, src):
    kwargs = dict(beam_size=4, max_len_b=6, n_best=3, **SPECIALS)
    cached, uncached = beam_search(model, src, **kwargs), beam_search(model, src, use_cache=False, **kwargs)
    assert torch.equal(cached.tokens, uncached.tokens)
    torch.testing.assert_close(cached.scores, uncached.scores)


def test_beam_one_without_length_penalty_is_greedy(model, src):
    beam = beam_search(model, src, beam_size=1, alpha=0.0, max_len_b=8, **SPECIALS)
    greedy = greedy_search(model, src, max_len_b=8, **SPECIALS)
    assert beam.best() == greedy.best()
    torch.testing.assert_close(beam.scores, greedy.scores)


def test_scores_are_length_normalised_logprobs_best_first(model, src, score):
    out = beam_search(model, src, beam_size=4, max_len_b=6, n_best=4, **SPECIALS)
    lengths = (src != PAD).sum(1)
    for i, nbest in enumerate(out.nbest()):
        assert [s for _, s in nbest] == sorted((s for _, s in nbest), reverse=True)
        hyps = [ids for ids, _ in nbest]
        references = score(model, src[i, : lengths[i]], hyps)
        for (ids, found), reference in zip(nbest, references):
            assert abs(found - reference / length_penalty(len(ids) + 1, 0.6)) < 1e-4
            assert len(ids) <= lengths[i] + 6


def test_batch_equals_one_sentence_at_a_time(model, src):
    """Padding, per-sentence length limits and dropping stopped sentences change nothing."""
    batch = beam_search(model, src, max_len_b=6, n_best=2, **SPECIALS)
    for i in range(src.shape[0]):
        alone = beam_search(
            model, src[i : i + 1, : int((src[i] != PAD).sum())], max_len_b=6, n_best=2, **SPECIALS
        )
        assert [ids for ids, _ in alone.nbest()[0]] == [ids for ids, _ in batch.nbest()[i]]
        torch.testing.assert_close(alone.scores[0], batch.scores[i])


def test_encoder_runs_once_per_sentence_and_memory_enters_once(model, src):
    encoder_rows, memory_rows, decoder_rows = [], [], []
    model.encoder.register_forward_pre_hook(lambda m, args: encoder_rows.append(args[0].shape[0]))

    def on_decoder(module, args):
        decoder_rows.append(args[0].shape[0])
        if args[1] is not None:
            memory_rows.append(args[1].shape[0])

    model.decoder.register_forward_pre_hook(on_decoder)
    beam_search(model, src, beam_size=4, max_len_b=3, **SPECIALS)
    assert encoder_rows == [3]
    assert memory_rows == [3]  # cross-attention keys/values computed for the 3 sentences only
    assert decoder_rows[0] == 3 and max(decoder_rows[1:]) == 3 * 4


def test_eos_ends_every_hypothesis(model, src):
    out = beam_search(model, src, beam_size=3, max_len_b=2, n_best=3, **SPECIALS)
    assert ((out.tokens == EOS).sum(-1) == 1).all()
    assert torch.isfinite(out.scores).all()


def test_beams_share_one_copy_of_the_cross_attention_keys_and_of_their_histories(model, src):
    """The cross-attention keys/values are computed once per sentence and never copied while
    its beams search (one storage, one row per sentence, at every step); the beams' own
    self-attention keys/values are never reordered either (one storage until it grows)."""
    caches, cross, history = [], set(), []
    new_cache = model.new_cache
    model.new_cache = lambda *args, **kwargs: caches.append(new_cache(*args, **kwargs)) or caches[-1]

    def on_decoder(module, args):
        layer = caches[0].layers[0]
        if not layer.cross_attn.is_empty:
            keys = layer.cross_attn.keys
            cross.add((keys.data_ptr(), keys.shape[0], args[0].shape[0]))
            history.append(layer.self_attn.keys.data_ptr())

    model.decoder.register_forward_pre_hook(on_decoder)
    beam_search(model, src[:1], beam_size=4, max_len_b=8, **SPECIALS)
    ((_, sentences, rows),) = cross  # one storage at every step
    assert (sentences, rows) == (1, 4)
    assert len(set(history)) == 1 and len(history) >= 8  # within the first capacity (16 steps)


class ScriptedModel:
    """An encoder-decoder whose next-token probabilities are a table keyed by the prefix
    (uncached decoding only): a search's choices can be worked out by hand."""

    max_len = 64

    def __init__(self, table: dict[tuple[int, ...], dict[int, float]], vocab: int = 6) -> None:
        self.table, self.vocab = table, vocab

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.zeros(src.shape[0], 1, 1), torch.ones(src.shape[0], 1, 1, 1, dtype=torch.bool)

    def decode(self, tgt_in, memory, memory_mask, cache=None) -> torch.Tensor:
        logits = torch.full((tgt_in.shape[0], tgt_in.shape[1], self.vocab), -30.0)
        for row, prefix in enumerate(tgt_in[:, 1:].tolist()):
            for token, p in self.table.get(tuple(prefix), {EOS: 1.0}).items():
                logits[row, -1, token] = torch.tensor(p).log()
        return logits


def test_patience_stops_once_enough_hypotheses_ended_and_may_miss_a_better_one():
    """Beam 2, no length penalty. Step 0 ends [] (log .3) and keeps a, b; step 1 ends [b]
    (a second hypothesis) and keeps [a a] (log .35). Patience 1 (two ended) stops there with
    []; the exact rule sees that [a a] may still beat it and finds [a a] (log .3465)."""
    a, b = 4, 5
    model = ScriptedModel(
        {
            (): {EOS: 0.3, a: 0.5, b: 0.2},
            (a,): {a: 0.7, EOS: 0.3},
            (b,): {EOS: 0.9, a: 0.05, b: 0.05},
            (a, a): {EOS: 0.99, a: 0.01},
        }
    )
    kwargs = dict(beam_size=2, alpha=0.0, max_len_b=5, use_cache=False, **SPECIALS)
    exact = beam_search(model, torch.tensor([[a]]), **kwargs).nbest()[0][0]
    patient = beam_search(model, torch.tensor([[a]]), patience=1.0, **kwargs).nbest()[0][0]
    assert exact[0] == [a, a] and abs(exact[1] - torch.tensor(0.5 * 0.7 * 0.99).log()) < 1e-5
    assert patient[0] == [] and abs(patient[1] - torch.tensor(0.3).log()) < 1e-5
    # Twice as patient (four ended hypotheses): it goes on to find [a a] too.
    assert beam_search(model, torch.tensor([[a]]), patience=2.0, **kwargs).best() == [[a, a]]


def test_ample_patience_changes_nothing(model, src):
    """Patience only adds a way to stop: with more of it than hypotheses can end, the result is
    the exact search's."""
    kwargs = dict(beam_size=4, max_len_b=6, n_best=2, **SPECIALS)
    exact, patient = beam_search(model, src, **kwargs), beam_search(model, src, patience=100.0, **kwargs)
    assert torch.equal(exact.tokens, patient.tokens)
    torch.testing.assert_close(exact.scores, patient.scores)


@pytest.mark.parametrize("patience", [None, 1.0])
def test_sequences_waiting_to_leave_the_batch_change_nothing(make_model, patience):
    """40 sentences of 20 lengths stop at different steps, two or so at a time: they wait in the
    batch, idle, until an eighth of it has stopped (fewer leavings than with every stopped
    sentence leaving at once). Each one's hypotheses equal its own search's. A vocabulary of 8,
    so that hypotheses end early and patience stops sentences before their length limits (a
    waiting sentence left searching would then find other hypotheses for 3 of them)."""
    model = make_model(vocab=8, seed=2)
    g = torch.Generator().manual_seed(5)
    src = torch.randint(4, 8, (40, 20), generator=g)
    for i in range(40):
        src[i, 1 + i % 20 :] = PAD
    kwargs = dict(beam_size=3, max_len_b=3, n_best=2, patience=patience, **SPECIALS)
    leavings = []
    select = DecodingState.select
    with patch.object(
        DecodingState,
        "select",
        lambda self, rows, sources=None: (
            leavings.append(sources) if sources is not None else None,
            select(self, rows, sources),
        ),
    ):
        batch = beam_search(model, src, **kwargs)
    assert len(leavings) <= 15  # 11 here; 18-19 when every stopped sentence leaves at once
    for i in range(40):
        alone = beam_search(model, src[i : i + 1, : int((src[i] != PAD).sum())], **kwargs)
        assert [ids for ids, _ in alone.nbest()[0]] == [ids for ids, _ in batch.nbest()[i]]
        torch.testing.assert_close(alone.scores[0], batch.scores[i])
