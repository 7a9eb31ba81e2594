"""Invariances of the encoder/decoder stacks: causality, padding, caching, local windows."""

import pytest
import torch
from torch import nn

from zoo.blocks import (
    Decoder,
    Encoder,
    EncoderLayer,
    LayerSpec,
    LocalAttention,
    causal_mask,
    init_transformer_,
    lengths_mask,
    local_mask,
    padding_mask,
)

D, H, FF = 16, 4, 32


def make_stacks(pre_norm: bool = False, window: int | None = None) -> tuple[Encoder, Decoder]:
    torch.manual_seed(0)
    spec = LayerSpec(D, H, FF, dropout=0.0, pre_norm=pre_norm, window=window)
    enc = Encoder.uniform(2, spec).double().eval()
    dec = Decoder.uniform(2, spec).double().eval()
    init_transformer_(enc), init_transformer_(dec)
    return enc, dec


@pytest.mark.parametrize("pre_norm", [False, True])
def test_cached_decoding_equals_full_forward_at_every_step(pre_norm):
    enc, dec = make_stacks(pre_norm)
    src = torch.randn(2, 6, D, dtype=torch.float64)
    src_mask = lengths_mask(torch.tensor([6, 3]), 6)
    memory = enc(src, pad_mask=src_mask)
    tgt = torch.randn(2, 8, D, dtype=torch.float64)
    full = dec(tgt, memory, memory_mask=src_mask)
    cache = dec.new_cache()
    for t in range(tgt.shape[1]):
        step = dec(tgt[:, t : t + 1], memory if t == 0 else None, memory_mask=src_mask, cache=cache)
        torch.testing.assert_close(step[:, 0], full[:, t], rtol=0, atol=1e-10)
    assert cache.offset == tgt.shape[1]


def test_cached_decoding_in_chunks_uses_offset_mask():
    enc, dec = make_stacks()
    memory = enc(torch.randn(1, 4, D, dtype=torch.float64))
    tgt = torch.randn(1, 7, D, dtype=torch.float64)
    full = dec(tgt, memory)
    cache = dec.new_cache()
    first = dec(tgt[:, :3], memory, cache=cache)
    rest = dec(tgt[:, 3:], None, cache=cache)
    torch.testing.assert_close(torch.cat([first, rest], 1), full, rtol=0, atol=1e-10)


def test_cache_reorder_selects_hypotheses():
    enc, dec = make_stacks()
    memory = enc(torch.randn(3, 4, D, dtype=torch.float64))
    tgt = torch.randn(3, 5, D, dtype=torch.float64)
    cache = dec.new_cache()
    dec(tgt[:, :4], memory, cache=cache)
    order = torch.tensor([2, 2, 0])
    cache.reorder(order)
    cache.select_sources(order)  # one row per source: the cross caches follow the rows
    last = dec(tgt[order, 4:], None, cache=cache)
    expected = dec(tgt[order], memory[order])[:, 4:]
    torch.testing.assert_close(last, expected, rtol=0, atol=1e-10)


def test_future_tokens_do_not_change_earlier_outputs():
    enc, dec = make_stacks()
    memory = enc(torch.randn(2, 5, D, dtype=torch.float64))
    tgt = torch.randn(2, 6, D, dtype=torch.float64)
    changed = tgt.clone()
    changed[:, 4:] = torch.randn(2, 2, D, dtype=torch.float64)
    before, after = dec(tgt, memory), dec(changed, memory)
    torch.testing.assert_close(before[:, :4], after[:, :4], rtol=0, atol=1e-12)
    assert not torch.allclose(before[:, 4:], after[:, 4:])


def test_padding_does_not_change_real_positions():
    enc, dec = make_stacks()
    src = torch.randn(1, 4, D, dtype=torch.float64)
    padded = torch.cat([src, torch.randn(1, 3, D, dtype=torch.float64)], dim=1)
    mask = lengths_mask(torch.tensor([4]), 7)
    mem_short, mem_padded = enc(src), enc(padded, pad_mask=mask)
    torch.testing.assert_close(mem_padded[:, :4], mem_short, rtol=0, atol=1e-12)
    tgt = torch.randn(1, 3, D, dtype=torch.float64)
    torch.testing.assert_close(
        dec(tgt, mem_padded, memory_mask=mask), dec(tgt, mem_short), rtol=0, atol=1e-12
    )


@pytest.mark.parametrize("pre_norm", [False, True])
@pytest.mark.parametrize("outputs", [slice(0, 1), slice(2, 5)])
def test_outputs_computes_the_slice_of_the_full_output_and_its_gradients(pre_norm, outputs):
    """Only the wanted positions through the last layer: the same values at real tokens, and
    the same gradients for the input and every weight (the unwanted positions' outputs, and
    padding's, are unused)."""
    enc, _ = make_stacks(pre_norm)
    x = torch.randn(2, 6, D, dtype=torch.float64, requires_grad=True)
    mask = lengths_mask(torch.tensor([6, 4]), 6)
    real = mask[:, 0, 0, outputs, None]
    full = enc(x, pad_mask=mask)[:, outputs] * real
    part = enc(x, pad_mask=mask, outputs=outputs) * real
    torch.testing.assert_close(part, full, rtol=0, atol=1e-12)
    weights = torch.randn_like(full)
    params = [x, *enc.parameters()]
    expected = torch.autograd.grad((full * weights).sum(), params)
    got = torch.autograd.grad((part * weights).sum(), params)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, rtol=0, atol=1e-12)


def test_outputs_with_a_window_is_refused():
    enc, _ = make_stacks(window=1)
    with pytest.raises(ValueError, match="windowed"):
        enc(torch.randn(1, 4, D, dtype=torch.float64), outputs=slice(0, 1))


def test_padding_mask_from_token_ids():
    tokens = torch.tensor([[5, 6, 0], [7, 0, 0]])
    assert padding_mask(tokens, 0).shape == (2, 1, 1, 3)
    assert padding_mask(tokens, 0)[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]


def test_local_window_covering_the_sequence_equals_full_attention():
    full_enc, full_dec = make_stacks()
    local_enc, local_dec = make_stacks(window=10)
    local_enc.load_state_dict(full_enc.state_dict()), local_dec.load_state_dict(full_dec.state_dict())
    src = torch.randn(2, 6, D, dtype=torch.float64)
    tgt = torch.randn(2, 5, D, dtype=torch.float64)
    torch.testing.assert_close(local_enc(src), full_enc(src), rtol=0, atol=1e-12)
    memory = full_enc(src)
    torch.testing.assert_close(local_dec(tgt, memory), full_dec(tgt, memory), rtol=0, atol=1e-12)


def test_narrow_window_restricts_the_receptive_field():
    """With window 1 and 2 layers, position 0 can depend on positions 0..2 only."""
    enc, _ = make_stacks(window=1)
    x = torch.randn(1, 8, D, dtype=torch.float64, requires_grad=True)
    # a random projection: the plain sum of a LayerNorm output is constant, with zero gradient
    (enc(x)[0, 0] * torch.randn(D, dtype=torch.float64)).sum().backward()
    reach = x.grad[0].abs().sum(-1) > 0
    assert reach.tolist() == [True, True, True] + [False] * 5


def test_post_norm_encoder_layer_equals_torch():
    torch.manual_seed(0)
    ours = EncoderLayer(LayerSpec(D, H, FF, dropout=0.0)).double().eval()
    init_transformer_(ours)
    for p in ours.parameters():  # random norms and biases too, so every mapping is checked
        p.data.normal_()
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True).double().eval()
    mapping = {
        "self_attn.in_proj_weight": "self_attn.qkv_proj.weight",
        "self_attn.in_proj_bias": "self_attn.qkv_proj.bias",
        "self_attn.out_proj.weight": "self_attn.out_proj.weight",
        "self_attn.out_proj.bias": "self_attn.out_proj.bias",
        "linear1.weight": "ffn.fc1.weight",
        "linear1.bias": "ffn.fc1.bias",
        "linear2.weight": "ffn.fc2.weight",
        "linear2.bias": "ffn.fc2.bias",
        "norm1.weight": "self_attn_res.norm.weight",
        "norm1.bias": "self_attn_res.norm.bias",
        "norm2.weight": "ffn_res.norm.weight",
        "norm2.bias": "ffn_res.norm.bias",
    }
    ours_state = ours.state_dict()
    ref.load_state_dict({theirs: ours_state[mine] for theirs, mine in mapping.items()})
    x = torch.randn(2, 5, D, dtype=torch.float64)
    mask = lengths_mask(torch.tensor([5, 2]), 5)
    expected = ref(x, src_key_padding_mask=~mask[:, 0, 0])
    torch.testing.assert_close(ours(x, mask=mask)[0], expected[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(ours(x, mask=mask)[1, :2], expected[1, :2], rtol=0, atol=1e-12)
    torch.testing.assert_close(
        ours(x, mask=causal_mask(5)), ref(x, src_mask=~causal_mask(5)), rtol=0, atol=1e-12
    )


@pytest.mark.parametrize("pre_norm", [False, True])
def test_window_uses_local_attention_and_equals_the_masked_path(pre_norm):
    """The model option `window` builds the O(T w D) kernel; it computes what full attention
    with local_mask (& causal_mask, & padding) computes."""
    enc, dec = make_stacks(pre_norm, window=2)
    assert all(isinstance(layer.self_attn, LocalAttention) for layer in [*enc.layers, *dec.layers])
    assert not isinstance(dec.layers[0].cross_attn, LocalAttention)
    full_enc, full_dec = make_stacks(pre_norm)
    full_enc.load_state_dict(enc.state_dict()), full_dec.load_state_dict(dec.state_dict())
    src = torch.randn(2, 9, D, dtype=torch.float64)
    pad = lengths_mask(torch.tensor([9, 5]), 9)
    memory = enc(src, pad_mask=pad)
    expected = src
    for layer in full_enc.layers:  # the masked path, layer by layer
        expected = layer(expected, mask=local_mask(9, window=2) & pad)
    expected = expected if full_enc.final_norm is None else full_enc.final_norm(expected)
    torch.testing.assert_close(memory[0], expected[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(memory[1, :5], expected[1, :5], rtol=0, atol=1e-12)
    tgt = torch.randn(2, 7, D, dtype=torch.float64)
    band = local_mask(7, window=2) & causal_mask(7)
    out = dec(tgt, memory, memory_mask=pad)
    expected = tgt
    for layer in full_dec.layers:
        expected = layer(expected, memory, self_mask=band, memory_mask=pad)
    expected = expected if full_dec.final_norm is None else full_dec.final_norm(expected)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)


def test_cached_decoding_with_a_window_equals_full_forward():
    enc, dec = make_stacks(window=2)
    memory = enc(torch.randn(2, 5, D, dtype=torch.float64))
    tgt = torch.randn(2, 9, D, dtype=torch.float64)
    full = dec(tgt, memory)
    cache = dec.new_cache()
    steps = [dec(tgt[:, :3], memory, cache=cache)]  # a prefix, then one token at a time
    steps += [dec(tgt[:, t : t + 1], None, cache=cache) for t in range(3, 9)]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=0, atol=1e-10)


def test_uniform_final_norm_and_drop_path_rate():
    spec = LayerSpec(D, H, FF, pre_norm=True)
    assert Encoder.uniform(2, spec).final_norm is not None
    assert Encoder.uniform(2, spec, final_norm=False).final_norm is None
    assert Encoder.uniform(2, LayerSpec(D, H, FF)).final_norm is None  # post-norm
    enc = Encoder.uniform(3, spec, drop_path_rate=0.2)
    assert [
        layer.ffn_res.drop_path.drop_prob if hasattr(layer.ffn_res.drop_path, "drop_prob") else 0.0
        for layer in enc.layers
    ] == pytest.approx([0.0, 0.1, 0.2])


def test_layer_spec_covers_bert_post_norm_gelu_eps_and_rejects_unknown_names():
    spec = LayerSpec(D, H, FF, activation="gelu", norm_eps=1e-12, pre_norm=False, bias=True)
    layer = EncoderLayer(spec)
    assert isinstance(layer.ffn.act, nn.GELU) and layer.ffn_res.norm.eps == 1e-12
    assert not layer.ffn_res.pre_norm and layer.self_attn.qkv_proj.bias is not None
    with pytest.raises(ValueError, match="activation"):
        LayerSpec(D, H, FF, activation="swish")
    with pytest.raises(ValueError, match="norm"):
        LayerSpec(D, H, FF, norm="batch")
