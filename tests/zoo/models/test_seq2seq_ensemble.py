"""zoo.models.seq2seq_ensemble: the mean of the members' probabilities by brute force, copies of one
model decode as that model, cached decoding equals re-running the prefix, and members of other
widths and layer types (a Transformer beside a GRU) decode together."""

from __future__ import annotations

import pytest
import torch

from zoo.data.special import SPECIAL_IDS
from zoo.decode import beam_search, greedy_search
from zoo.models import ModelConfig, build_model
from zoo.models.seq2seq_ensemble import Seq2SeqEnsemble

VOCAB = 23
PAD = SPECIAL_IDS.pad
TRANSFORMER = dict(encoder_layers=2, decoder_layers=2, dim=32, ffn_dim=64, num_heads=4, dropout=0.0)


def member(seed: int, **changes) -> torch.nn.Module:
    torch.manual_seed(seed)
    return build_model(ModelConfig(**{**TRANSFORMER, **changes}), VOCAB, VOCAB, PAD).eval()


def sources() -> torch.Tensor:
    src = torch.randint(4, VOCAB, (3, 7), generator=torch.Generator().manual_seed(5))
    src[1, 5:] = PAD
    src[2, 3:] = PAD
    return src


@torch.no_grad()
def test_decode_is_the_log_of_the_members_mean_probability():
    members = [member(0), member(1, dim=48, num_heads=3), member(2, arch="rnn", rnn_dim=24)]
    ensemble = Seq2SeqEnsemble(members)
    src = sources()
    tgt_in = torch.randint(4, VOCAB, (3, 5), generator=torch.Generator().manual_seed(6))
    tgt_in[:, 0] = SPECIAL_IDS.bos
    mean = sum(m(src, tgt_in).softmax(dim=-1) for m in members) / len(members)
    torch.testing.assert_close(ensemble(src, tgt_in), mean.log(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("search", ["greedy", "beam"])
@torch.no_grad()
def test_copies_of_one_model_decode_as_that_model(search):
    model = member(0)
    twins = Seq2SeqEnsemble([model, member(0)])
    limits = dict(special=SPECIAL_IDS, max_len_b=8)
    run = (
        greedy_search
        if search == "greedy"
        else lambda m, s, **k: beam_search(m, s, beam_size=3, n_best=3, **k)
    )
    alone, together = run(model, sources(), **limits), run(twins, sources(), **limits)
    assert together.best() == alone.best()
    torch.testing.assert_close(together.scores, alone.scores, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("search", ["greedy", "beam"])
@torch.no_grad()
def test_cached_decoding_equals_rerunning_the_prefix(search):
    ensemble = Seq2SeqEnsemble([member(0), member(1, dim=48, num_heads=3), member(2, arch="rnn", rnn_dim=24)])
    limits = dict(special=SPECIAL_IDS, max_len_b=8)
    if search == "greedy":
        cached = greedy_search(ensemble, sources(), **limits)
        full = greedy_search(ensemble, sources(), use_cache=False, **limits)
    else:
        cached = beam_search(ensemble, sources(), beam_size=3, **limits)
        full = beam_search(ensemble, sources(), beam_size=3, use_cache=False, **limits)
    assert cached.best() == full.best()
    torch.testing.assert_close(cached.scores, full.scores, atol=1e-4, rtol=1e-4)
    if search == "greedy":  # not one member's choice: some member alone decodes otherwise
        assert any(greedy_search(m, sources(), **limits).best() != cached.best() for m in ensemble.members)


def test_one_member_is_not_an_ensemble():
    with pytest.raises(ValueError, match="at least two"):
        Seq2SeqEnsemble([member(0)])
