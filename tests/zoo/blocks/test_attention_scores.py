"""MultiHeadAttention's scores (scaled dot product, dot product, additive) and query/key width
against a direct loop over batch, head, query and key; caches against the full forward; a tiny
encoder-decoder trains with each; configs and the CTranslate2 export refuse what they cannot take."""

import dataclasses
import math

import pytest
import torch

from zoo.blocks import (
    SCORES,
    DecoderCache,
    KVCache,
    LayerSpec,
    MultiHeadAttention,
    attention_maps,
    causal_mask,
    lengths_mask,
)
from zoo.config import Invalid, UserError
from zoo.convert.ctranslate2 import ctranslate2_spec
from zoo.models import ModelConfig, build_model

B, T, S, D, H = 2, 5, 4, 8, 2
VARIANTS = [(score, key_dim) for score in SCORES for key_dim in (None, 3)]


def attention(score: str, key_dim: int | None, **kwargs) -> MultiHeadAttention:
    torch.manual_seed(0)
    module = MultiHeadAttention(D, H, score=score, key_dim=key_dim, **kwargs).double()
    with torch.no_grad():  # nonzero biases so their layout is checked too
        module.qkv_proj.bias.normal_()
    return module.eval()


def score_of(mha: MultiHeadAttention, head: int, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """e_ij for one query and one key vector, written from the definitions."""
    if mha.score == "additive":
        return (mha.additive.weight[head] * torch.tanh(q + k)).sum()
    dot = (q * k).sum()
    return dot / math.sqrt(len(q)) if mha.score == "scaled_dot" else dot


@torch.no_grad()
def loop_reference(mha: MultiHeadAttention, x: torch.Tensor, context: torch.Tensor, allowed) -> torch.Tensor:
    """Per batch row, head, query and key: project, score, softmax over the allowed keys, mix
    the values; heads concatenated and projected. `allowed(b, i, j)`: may query i see key j."""
    w_q, w_k, w_v = mha.qkv_proj.weight.split(mha.qkv_sizes)
    b_q, b_k, b_v = mha.qkv_proj.bias.split(mha.qkv_sizes)
    dk, dh = mha.key_dim, mha.head_dim
    out = []
    for b in range(x.shape[0]):
        heads = []
        for h in range(H):
            keys, values = slice(h * dk, (h + 1) * dk), slice(h * dh, (h + 1) * dh)
            q = x[b] @ w_q[keys].T + b_q[keys]
            k = context[b] @ w_k[keys].T + b_k[keys]
            v = context[b] @ w_v[values].T + b_v[values]
            rows = []
            for i in range(len(q)):
                scores = [
                    score_of(mha, h, q[i], k[j]) if allowed(b, i, j) else -math.inf for j in range(len(k))
                ]
                weights = torch.softmax(torch.tensor(scores, dtype=x.dtype), dim=0)
                rows.append(sum(weights[j] * v[j] for j in range(len(k))))
            heads.append(torch.stack(rows))
        out.append(mha.out_proj(torch.cat(heads, dim=-1)))
    return torch.stack(out)


def assert_both_paths(mha: MultiHeadAttention, run, expected: torch.Tensor) -> None:
    """`run(mha)` equals `expected` in training mode (no dropout here: the fused kernel for the dot
    products) and in eval mode (these few queries take the decoding steps' written-out path)."""
    for training in (True, False):
        torch.testing.assert_close(run(mha.train(training)), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("score, key_dim", VARIANTS)
def test_self_attention_with_key_padding_equals_the_loop(score, key_dim):
    mha = attention(score, key_dim)
    x = torch.randn(B, T, D, dtype=torch.float64)
    lengths = torch.tensor([5, 3])
    expected = loop_reference(mha, x, x, lambda b, i, j: j < lengths[b])
    assert_both_paths(mha, lambda m: m(x, mask=lengths_mask(lengths, T)), expected)


@pytest.mark.parametrize("score, key_dim", VARIANTS)
def test_causal_self_attention_equals_the_loop(score, key_dim):
    mha = attention(score, key_dim)
    x = torch.randn(B, T, D, dtype=torch.float64)
    expected = loop_reference(mha, x, x, lambda b, i, j: j <= i)
    assert_both_paths(mha, lambda m: m(x, is_causal=True), expected)
    assert_both_paths(mha, lambda m: m(x, mask=causal_mask(T)), expected)


@pytest.mark.parametrize("score, key_dim", VARIANTS)
def test_cross_attention_with_padding_equals_the_loop(score, key_dim):
    mha = attention(score, key_dim)
    x, context = torch.randn(B, T, D, dtype=torch.float64), torch.randn(B, S, D, dtype=torch.float64)
    lengths = torch.tensor([2, 4])
    expected = loop_reference(mha, x, context, lambda b, i, j: j < lengths[b])
    assert_both_paths(mha, lambda m: m(x, context, mask=lengths_mask(lengths, S)), expected)


@pytest.mark.parametrize("score, key_dim", VARIANTS)
def test_cached_steps_equal_the_full_forward(score, key_dim):
    """Self-attention appending to a cache one query at a time, and cross-attention filling its
    cache on the first step, give the full causal forward's rows."""
    mha = attention(score, key_dim)
    x, context = torch.randn(B, T, D, dtype=torch.float64), torch.randn(B, S, D, dtype=torch.float64)
    self_cache, cross_cache = KVCache(), KVCache(cross=True)
    steps = [mha(x[:, t : t + 1], cache=self_cache) for t in range(T)]
    torch.testing.assert_close(torch.cat(steps, dim=1), mha(x, is_causal=True), rtol=0, atol=1e-12)
    crossed = [mha(x[:, t : t + 1], context if t == 0 else None, cache=cross_cache) for t in range(T)]
    torch.testing.assert_close(torch.cat(crossed, dim=1), mha(x, context), rtol=0, atol=1e-12)
    assert self_cache.keys.shape == (B, H, T, mha.key_dim)
    assert self_cache.values.shape == (B, H, T, D // H)


@pytest.mark.parametrize("score, key_dim", [("additive", 3), ("dot", 6)])
def test_beams_reading_shared_histories_attend_like_per_row_copies(score, key_dim):
    """Beam search's cache (keys and values of different widths) against per-row caches."""
    mha = attention(score, key_dim)
    sources, beams = 2, 3
    shared, copied = DecoderCache.empty(1, beams=beams), DecoderCache.empty(1)
    rows = sources
    for _ in range(4):
        x = torch.randn(rows, 1, D, dtype=torch.float64)
        ours = mha(x, cache=shared.layers[0].self_attn)
        torch.testing.assert_close(ours, mha(x, cache=copied.layers[0].self_attn), rtol=0, atol=1e-12)
        order = torch.arange(sources)[:, None] * (rows // sources) + torch.randint(
            0, rows // sources, (sources, beams)
        )
        shared.reorder(order.flatten()), copied.reorder(order.flatten())
        rows = sources * beams


def test_key_dim_sets_the_projection_sizes():
    mha = MultiHeadAttention(D, H, key_dim=6)
    assert mha.qkv_proj.weight.shape == (2 * H * 6 + D, D)
    assert MultiHeadAttention(D, H).qkv_proj.weight.shape == (3 * D, D)  # the fused (3D, D) layout
    assert mha(torch.randn(B, T, D)).shape == (B, T, D)


def test_additive_maps_are_the_weights_the_output_uses():
    mha = attention("additive", None)
    x = torch.randn(B, T, D, dtype=torch.float64)
    plain = mha(x, is_causal=True)
    with attention_maps(mha) as maps:
        recorded = mha(x, is_causal=True)
    torch.testing.assert_close(recorded, plain, rtol=0, atol=1e-12)
    (weights,) = maps[""]
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T, dtype=torch.float64))
    assert weights.triu(1).abs().max() == 0


def test_additive_drops_attention_weights_in_training_only():
    mha = attention("additive", None, dropout=0.5)
    x = torch.randn(B, T, D, dtype=torch.float64)
    evaluated = mha(x)
    assert not torch.allclose(mha.train()(x), evaluated)
    torch.testing.assert_close(mha.eval()(x), evaluated, rtol=0, atol=0)


TINY = ModelConfig(
    encoder_layers=1, decoder_layers=1, dim=32, ffn_dim=64, num_heads=4, dropout=0.0, max_len=16
)
VOCAB, PAD, BOS = 12, 0, 1


@pytest.mark.parametrize("score, key_dim", [(score, None) for score in SCORES] + [("scaled_dot", 4)])
def test_encoder_decoder_decodes_as_it_forwards_and_learns_to_copy(score, key_dim):
    torch.manual_seed(0)
    model = build_model(dataclasses.replace(TINY, attention_score=score, key_dim=key_dim), VOCAB, VOCAB, PAD)
    src = torch.randint(2, VOCAB, (3, 6))
    tgt_in = torch.cat([torch.full((3, 1), BOS), src[:, :-1]], dim=1)
    model.eval()
    with torch.no_grad():
        full = model(src, tgt_in)
        memory, memory_mask = model.encode(src)
        cache = model.new_cache()
        steps = [model.decode(tgt_in[:, t : t + 1], memory, memory_mask, cache) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)

    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(150):
        src = torch.randint(2, VOCAB, (32, 6))
        tgt_in = torch.cat([torch.full((32, 1), BOS), src[:, :-1]], dim=1)
        sums = model(src, tgt_in, src)
        loss = sums.loss / sums.units
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    # From ~3.4 (chance: log 10 = 2.3) to 0.1-0.45 at this seed; unlearned copying stays near 2.
    assert sum(losses[-5:]) / 5 < 0.3 * losses[0], losses


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"attention_score": "bilinear"}, "attention_score"),
        ({"key_dim": 0}, "key_dim"),
        ({"window": 2, "attention_score": "additive"}, "attention_score"),
        ({"window": 2, "key_dim": 4}, "key_dim"),
    ],
)
def test_config_refuses_by_name(changes, key):
    with pytest.raises(Invalid, match=f"key '{key}'"):
        dataclasses.replace(TINY, **changes).check()


def test_layer_spec_refuses_restricted_attention_with_another_score():
    with pytest.raises(ValueError, match="restricted attention"):
        LayerSpec(D, H, 16, window=1, attention_score="dot")


@pytest.mark.parametrize(
    "changes, key", [({"attention_score": "additive"}, "attention_score"), ({"key_dim": 4}, "key_dim")]
)
def test_ctranslate2_export_refuses_by_name(changes, key):
    model = build_model(dataclasses.replace(TINY, **changes), VOCAB, VOCAB, PAD)
    with pytest.raises(UserError, match=f"model.{key}="):
        ctranslate2_spec(model, [str(i) for i in range(VOCAB)])
