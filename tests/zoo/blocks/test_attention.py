"""MultiHeadAttention against torch.nn.MultiheadAttention and a plain softmax reference."""

import copy
import math

import pytest
import torch
from torch import nn

from zoo.blocks import KVCache, MultiHeadAttention, attention_maps, causal_mask, lengths_mask
from zoo.blocks import attention as attention_module
from zoo.blocks.attention import FLOAT32_CPU_MAX_KEYS, FLOAT32_CPU_MIN_SCORES, LOW_PRECISION_CPU_MAX_KEYS

B, T, S, D, H = 3, 7, 5, 16, 4


def copy_into_torch(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    ref = nn.MultiheadAttention(D, H, batch_first=True).double()
    with torch.no_grad():
        ref.in_proj_weight.copy_(mha.qkv_proj.weight)
        ref.in_proj_bias.copy_(mha.qkv_proj.bias)
        ref.out_proj.weight.copy_(mha.out_proj.weight)
        ref.out_proj.bias.copy_(mha.out_proj.bias)
    return ref


@pytest.fixture
def mha() -> MultiHeadAttention:
    torch.manual_seed(0)
    module = MultiHeadAttention(D, H).double()
    with torch.no_grad():  # nonzero biases so their layout is checked too
        module.qkv_proj.bias.normal_()
        module.out_proj.bias.normal_()
    return module


def test_self_attention_with_padding_equals_torch(mha):
    x = torch.randn(B, T, D, dtype=torch.float64)
    lengths = torch.tensor([7, 4, 1])
    ours = mha(x, mask=lengths_mask(lengths, T))
    theirs, _ = copy_into_torch(mha)(
        x, x, x, key_padding_mask=~lengths_mask(lengths, T)[:, 0, 0], need_weights=False
    )
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)


def test_causal_self_attention_equals_torch(mha):
    x = torch.randn(B, T, D, dtype=torch.float64)
    torch_mask = ~causal_mask(T)  # torch: True = masked out
    theirs, _ = copy_into_torch(mha)(x, x, x, attn_mask=torch_mask, need_weights=False)
    torch.testing.assert_close(mha(x, is_causal=True), theirs, rtol=0, atol=1e-12)
    torch.testing.assert_close(mha(x, mask=causal_mask(T)), theirs, rtol=0, atol=1e-12)


def test_cross_attention_with_padding_equals_torch(mha):
    x = torch.randn(B, T, D, dtype=torch.float64)
    context = torch.randn(B, S, D, dtype=torch.float64)
    lengths = torch.tensor([5, 2, 3])
    ours = mha(x, context, mask=lengths_mask(lengths, S))
    theirs, _ = copy_into_torch(mha)(
        x, context, context, key_padding_mask=~lengths_mask(lengths, S)[:, 0, 0], need_weights=False
    )
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("queries", [1, 3])
def test_rows_sharing_a_context_equal_the_context_repeated(mha, queries):
    """Beam search: g consecutive rows per source over one copy of its keys (cached after the
    first call) give what each row gets from a copy of its own."""
    g, lengths = 4, torch.tensor([5, 2, 3])
    x = torch.randn(B * g, queries, D, dtype=torch.float64)
    context = torch.randn(B, S, D, dtype=torch.float64)
    mask = lengths_mask(lengths, S)
    cache = KVCache(cross=True)
    first, again = mha(x, context, mask=mask, cache=cache), mha(x, mask=mask, cache=cache)
    repeated = mha(x, context.repeat_interleave(g, 0), mask=mask.repeat_interleave(g, 0))
    assert cache.keys.shape[0] == B
    torch.testing.assert_close(first, repeated, rtol=0, atol=1e-12)
    torch.testing.assert_close(again, repeated, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="evenly"):
        mha(x[1:], context)


def test_few_query_steps_in_eval_mode_equal_the_fused_kernel(mha):
    x = torch.randn(B, 1, D, dtype=torch.float64)
    context = torch.randn(B, S, D, dtype=torch.float64)
    mask = lengths_mask(torch.tensor([5, 2, 3]), S)
    fused = mha.train()(x, context, mask=mask)  # no dropout: the fused kernel's numbers
    torch.testing.assert_close(mha.eval()(x, context, mask=mask), fused, rtol=0, atol=1e-12)


def test_equals_plain_softmax_reference(mha):
    """softmax(Q K^T / sqrt(d_k)) V per head, concatenated and projected (eq. 1-2), by hand."""
    x = torch.randn(B, T, D, dtype=torch.float64)
    mask = causal_mask(T)
    w_q, w_k, w_v = mha.qkv_proj.weight.chunk(3)
    b_q, b_k, b_v = mha.qkv_proj.bias.chunk(3)
    heads = []
    for h in range(H):
        rows = slice(h * D // H, (h + 1) * D // H)
        q = x @ w_q[rows].T + b_q[rows]
        k = x @ w_k[rows].T + b_k[rows]
        v = x @ w_v[rows].T + b_v[rows]
        scores = (q @ k.transpose(1, 2) / math.sqrt(D // H)).masked_fill(~mask, -math.inf)
        heads.append(torch.softmax(scores, dim=-1) @ v)
    expected = mha.out_proj(torch.cat(heads, dim=-1))
    torch.testing.assert_close(mha(x, mask=mask), expected, rtol=0, atol=1e-12)


def test_attention_maps_record_rows_that_sum_to_one(mha):
    x = torch.randn(B, T, D, dtype=torch.float64)
    fused = mha(x, is_causal=True)
    with attention_maps(mha) as maps:
        explicit = mha(x, is_causal=True)
    torch.testing.assert_close(fused, explicit)
    (weights,) = maps[""]
    assert weights.shape == (B, H, T, T)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T, dtype=torch.float64))
    assert weights.triu(1).abs().max() == 0  # causal: nothing above the diagonal
    mha(x)
    assert len(maps[""]) == 1  # recording ends with the block


def test_attention_maps_name_every_module_and_record_each_call():
    from zoo.blocks import Decoder, LayerSpec

    dec = Decoder.uniform(2, LayerSpec(D, H, 16, dropout=0.0, window=1)).double().eval()
    memory = torch.randn(B, 3, D, dtype=torch.float64)
    cache = dec.new_cache()
    with attention_maps(dec) as maps:
        dec(torch.randn(B, 2, D, dtype=torch.float64), memory, cache=cache)
        dec(torch.randn(B, 1, D, dtype=torch.float64), None, cache=cache)
        dec(torch.randn(B, 4, D, dtype=torch.float64), memory)
    assert sorted(maps) == [f"layers.{i}.{a}" for i in range(2) for a in ("cross_attn", "self_attn")]
    shapes = [tuple(w.shape) for w in maps["layers.1.self_attn"]]
    assert shapes == [(B, H, 2, 2), (B, H, 1, 3), (B, H, 4, 4)]
    band = maps["layers.0.self_attn"][2][0, 0]  # window 1, causal: the diagonal and the one before
    assert (band > 0).tolist() == [[j in (i - 1, i) for j in range(4)] for i in range(4)]
    assert tuple(maps["layers.0.cross_attn"][1].shape) == (B, H, 1, 3)


def test_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)


@pytest.mark.parametrize("keys", [LOW_PRECISION_CPU_MAX_KEYS, LOW_PRECISION_CPU_MAX_KEYS + 1])
def test_short_bf16_attention_on_the_cpu_is_written_out_and_equals_the_fused_kernel(keys, monkeypatch):
    """Under bf16 autocast on a CPU, up to LOW_PRECISION_CPU_MAX_KEYS keys skip the fused kernel
    (slower there), with the fused kernel's result and gradients to bf16 rounding."""
    torch.manual_seed(0)
    module = MultiHeadAttention(D, H).train()
    x = torch.randn(2, keys, D, requires_grad=True)
    mask = lengths_mask(torch.tensor([keys, keys // 2]), keys)

    def run():
        calls = []
        real = attention_module.F.scaled_dot_product_attention
        monkeypatch.setattr(attention_module.F, "scaled_dot_product_attention",
                            lambda *a, **k: calls.append(1) or real(*a, **k))  # fmt: skip
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = module(x, mask=mask, is_causal=False)
        monkeypatch.undo()
        out.float().square().sum().backward()
        grad, x.grad = x.grad.clone(), None
        return out.float(), grad, bool(calls)

    written, written_grad, fused_called = run()
    assert fused_called == (keys > LOW_PRECISION_CPU_MAX_KEYS)
    # The same computation in float32 through the fused kernel: the bf16 result is within bf16's
    # rounding of it (8 significant bits, a few products deep).
    with torch.no_grad():
        expected = module(x, mask=mask)
    torch.testing.assert_close(written, expected, atol=0.05, rtol=0.05)
    expected = module(x, mask=mask)
    expected.square().sum().backward()
    torch.testing.assert_close(written_grad, x.grad, atol=0.1, rtol=0.1)


@pytest.mark.parametrize(
    "rows, keys, written",
    [
        (12, 14, True),  # 12 x 4 x 14 x 14 scores: past FLOAT32_CPU_MIN_SCORES
        (12, FLOAT32_CPU_MAX_KEYS, True),
        (12, FLOAT32_CPU_MAX_KEYS + 1, False),
        (3, 14, False),  # too few scores: one kernel call is cheaper
    ],
)
@pytest.mark.parametrize("is_causal", [False, True])
def test_short_float32_attention_on_the_cpu_is_written_out_and_equals_the_fused_kernel(
    rows, keys, written, is_causal, monkeypatch
):
    """In float32 on a CPU, attention over few keys (FLOAT32_CPU_MAX_KEYS) with enough scores
    (FLOAT32_CPU_MIN_SCORES) skips the fused kernel (no faster there), with its result and
    gradients (the kernel's, in float64)."""
    assert (rows * H * keys * keys >= FLOAT32_CPU_MIN_SCORES) == (rows == 12)
    torch.manual_seed(0)
    module = MultiHeadAttention(D, H).train()
    x = torch.randn(rows, keys, D, requires_grad=True)
    mask = None if is_causal else lengths_mask(torch.randint(1, keys + 1, (rows,)), keys)
    calls = []
    real = attention_module.F.scaled_dot_product_attention
    monkeypatch.setattr(attention_module.F, "scaled_dot_product_attention",
                        lambda *a, **k: calls.append(1) or real(*a, **k))  # fmt: skip
    out = module(x, mask=mask, is_causal=is_causal)
    monkeypatch.undo()
    assert bool(calls) != written
    (grad,) = torch.autograd.grad(out.square().sum(), x)
    x64 = x.detach().double().requires_grad_(True)
    expected = copy.deepcopy(module).double()(x64, mask=mask, is_causal=is_causal)
    (expected_grad,) = torch.autograd.grad(expected.square().sum(), x64)
    torch.testing.assert_close(out, expected.float(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad, expected_grad.float(), rtol=1e-4, atol=1e-4)
