"""zoo.models.recurrent_seq2seq: Bahdanau's equations written out, incremental decoding against
the teacher-forced forward, source padding, the shared decoders, a copy task learned, the config's
and the converters' refusals, and the cross-attention maps of the attention verb."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from zoo.config import ConfigError, UserError, load_config
from zoo.convert.ctranslate2 import ctranslate2_spec
from zoo.data.special import SPECIAL_IDS
from zoo.decode import beam_search, greedy_search
from zoo.models import ModelConfig, RecurrentSeq2Seq, build_model
from zoo.plot import cross_attention_weights

PAD, BOS, EOS = SPECIAL_IDS.pad, SPECIAL_IDS.bos, SPECIAL_IDS.eos
VOCAB = 23


def tiny(seed: int = 0, **changes) -> RecurrentSeq2Seq:
    torch.manual_seed(seed)
    cfg = ModelConfig(arch="rnn", dim=16, rnn_dim=24, encoder_layers=2, decoder_layers=2, dropout=0.0)
    for key, value in changes.items():
        setattr(cfg, key, value)
    cfg.check()
    return build_model(cfg, VOCAB, VOCAB, PAD).eval()


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Three right-padded sources of different lengths and teacher-forced targets."""
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, VOCAB, (3, 7), generator=g)
    src[1, 5:] = PAD
    src[2, 2:] = PAD
    tgt = torch.randint(4, VOCAB, (3, 6), generator=g)
    tgt[:, 0] = BOS
    return src, tgt


def test_one_layer_gru_computes_bahdanaus_equations():
    """A direct loop over the steps with the model's weights: s_0 = tanh(W mean h), c_i from
    softmax(w . tanh(W_q s_{i-1} + W_k h_j)) over the values, s_i = GRU([E y_{i-1}; c_i], s_{i-1}),
    output tanh(W_o [s_i; c_i; E y_{i-1}]) E^T."""
    model = tiny(encoder_layers=1, decoder_layers=1)
    src, tgt = batch()
    src, tgt = src[1:2, :5], tgt[1:2]  # one sentence, no padding
    dec, attn = model.decoder, model.decoder.cross_attn
    h = model.encoder.rnn(model.src_embed(src))[0][0]  # (S, H)
    w_q, w_k, w_v = attn.qkv_proj.weight.split(attn.qkv_sizes)
    b_q, b_k, b_v = attn.qkv_proj.bias.split(attn.qkv_sizes)
    cell = torch.nn.GRUCell(dec.rnn.input_size, dec.rnn.hidden_size)
    cell.load_state_dict({name.removesuffix("_l0"): p for name, p in dec.rnn.named_parameters()})
    s = torch.tanh(dec.bridge(h.mean(0)))
    outputs = []
    for token in tgt[0]:
        y = model.tgt_embed(token)
        scores = torch.tanh(F.linear(s, w_q, b_q) + F.linear(h, w_k, b_k)) @ attn.additive.weight[0]
        c = attn.out_proj(scores.softmax(0) @ F.linear(h, w_v, b_v))
        s = cell(torch.cat([y, c])[None], s[None])[0]
        outputs.append(torch.tanh(dec.deep_output(torch.cat([s, c, y]))) @ model.output.weight.T)
    torch.testing.assert_close(model(src, tgt)[0], torch.stack(outputs), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn"])
def test_cached_steps_equal_the_teacher_forced_forward(cell):
    model = tiny(cell=cell)
    src, tgt = batch()
    full = model(src, tgt)
    memory, memory_mask = model.encode(src)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, :2], memory, memory_mask, cache)]  # two tokens, then one at a time
    steps += [model.decode(tgt[:, t : t + 1], None, memory_mask, cache) for t in range(2, tgt.shape[1])]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_source_padding_changes_nothing():
    """Each sentence alone and unpadded gives the logits it gets in the padded batch, wider
    padding included: padding enters neither the encoder's states nor the attention."""
    model = tiny(cell="lstm")
    src, tgt = batch()
    wider = torch.cat([src, torch.full((3, 4), PAD)], dim=1)
    together = model(wider, tgt)
    for row in range(3):
        alone = src[row : row + 1, : int((src[row] != PAD).sum())]
        torch.testing.assert_close(model(alone, tgt[row : row + 1])[0], together[row], atol=1e-5, rtol=1e-5)


def test_beam_one_is_greedy_and_the_cache_changes_no_search():
    model = tiny(seed=2)
    src, _ = batch()
    limits = dict(special=SPECIAL_IDS, max_len_b=8)
    greedy = greedy_search(model, src, **limits)
    one = beam_search(model, src, beam_size=1, alpha=0.0, **limits)
    assert one.best() == greedy.best()
    torch.testing.assert_close(one.scores, greedy.scores)
    for search in (greedy_search, lambda *a, **k: beam_search(*a, beam_size=4, n_best=4, **k)):
        cached, uncached = search(model, src, **limits), search(model, src, use_cache=False, **limits)
        assert torch.equal(cached.tokens, uncached.tokens)
        torch.testing.assert_close(cached.scores, uncached.scores)


@torch.no_grad()
def test_beam_scores_are_the_models_logprobs():
    """Each beam hypothesis is scored by the teacher-forced log p(hyp + EOS | src) over the GNMT
    length penalty: the reordered and grown states decoded what the forward computes."""
    model = tiny(seed=3)
    src, _ = batch()
    hyps = beam_search(model, src, special=SPECIAL_IDS, beam_size=3, n_best=3, alpha=0.6, max_len_b=6)
    for row, nbest in enumerate(hyps.nbest()):
        for ids, score in nbest:
            tgt_in, tgt_out = torch.tensor([[BOS, *ids]]), torch.tensor([[*ids, EOS]])
            logprob = model(src[row : row + 1], tgt_in).log_softmax(-1).gather(2, tgt_out[..., None]).sum()
            assert score == pytest.approx(logprob.item() / ((5 + len(ids) + 1) / 6) ** 0.6, abs=1e-4)


def test_a_tiny_model_learns_to_copy():
    """Trained on random sequences to repeat them, greedy search copies unseen ones."""
    model = tiny(dim=32, rnn_dim=64, encoder_layers=1, decoder_layers=1).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)

    def sequences(n: int) -> torch.Tensor:
        ids = torch.randint(4, 12, (n, 5), generator=g)
        return torch.cat([ids, torch.full((n, 1), EOS)], dim=1)

    for _ in range(250):
        src = sequences(64)
        tgt_in = torch.cat([torch.full((64, 1), BOS), src[:, :-1]], dim=1)
        loss = model(src, tgt_in, src).loss / 64
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    src = sequences(32)
    copied = greedy_search(model.eval(), src, special=SPECIAL_IDS, max_len_b=8).best()
    assert copied == src[:, :-1].tolist()


@pytest.mark.parametrize(
    "override, key",
    [("arch=lstm", "arch"), ("cell=tanh", "cell"), ("rnn_dim=7", "rnn_dim"), ("rnn_dim=0", "rnn_dim")],
)
def test_config_refuses_bad_values_naming_the_key(override, key):
    with pytest.raises(ConfigError) as error:
        load_config(ModelConfig, overrides=["arch=rnn", override])
    message = str(error.value)
    assert f"key '{key}'" in message and "\n" not in message


def test_ctranslate2_refuses_a_recurrent_model():
    with pytest.raises(UserError, match="model.arch=rnn") as error:
        ctranslate2_spec(tiny(), [f"piece{i}" for i in range(VOCAB)])
    assert "\n" not in str(error.value)


def test_cross_attention_maps_are_the_steps_weights_over_the_source():
    model = tiny()
    src, tgt = batch()
    weights = cross_attention_weights(model, src[0], tgt[0])
    assert weights.shape == (1, 1, tgt.shape[1], src.shape[1])  # one attention, one head
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, 1, tgt.shape[1]))
