"""zoo.convert.keys (through the package): renaming both ways, q/k/v fuse and split, strict loading."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from zoo.blocks import EncoderLayer, LayerSpec
from zoo.config import UserError
from zoo.convert import fuse_qkv, load_strict, rename, rename_key, split_qkv

# A BERT-like layer layout: q, k and v as three Linears.
TABLE = [
    ("layer.{i}.attention.self.query.", "layers.{i}.self_attn.q_proj."),
    ("layer.{i}.attention.self.key.", "layers.{i}.self_attn.k_proj."),
    ("layer.{i}.attention.self.value.", "layers.{i}.self_attn.v_proj."),
    ("layer.{i}.attention.output.dense.", "layers.{i}.self_attn.out_proj."),
    ("pooler.", "pooler."),
]


def test_rename_both_ways_and_refuse_unknown_keys_by_name() -> None:
    state = {"layer.3.attention.self.query.weight": torch.ones(1), "pooler.bias": torch.zeros(1)}
    ours = rename(state, TABLE)
    assert list(ours) == ["layers.3.self_attn.q_proj.weight", "pooler.bias"]
    assert list(rename(ours, TABLE, reverse=True)) == list(state)
    assert rename_key("layer.12.attention.output.dense.bias", TABLE) == "layers.12.self_attn.out_proj.bias"
    assert rename_key("layer.x.attention.self.query.weight", TABLE) is None  # {i} is digits only
    with pytest.raises(UserError, match=r"bert.bin: .*layer.0.attention.self.rotary.inv_freq"):
        rename({**state, "layer.0.attention.self.rotary.inv_freq": torch.ones(1)}, TABLE, source="bert.bin")
    assert list(rename(ours, TABLE, reverse=True, skip=("pooler.*",))) == list(state)[:1]


def test_fuse_equals_torch_multihead_in_proj_and_split_inverts_it() -> None:
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(8, 2, batch_first=True)
    q, k, v = (ref.in_proj_weight[i * 8 : (i + 1) * 8] for i in range(3))
    qb, kb, vb = ref.in_proj_bias.chunk(3)
    state = {
        "a.q_proj.weight": q,
        "a.k_proj.weight": k,
        "a.v_proj.weight": v,
        "a.q_proj.bias": qb,
        "a.k_proj.bias": kb,
        "a.v_proj.bias": vb,
        "other": torch.ones(2),
    }
    fused = fuse_qkv(state)
    assert sorted(fused) == ["a.qkv_proj.bias", "a.qkv_proj.weight", "other"]
    assert torch.equal(fused["a.qkv_proj.weight"], ref.in_proj_weight)
    assert torch.equal(fused["a.qkv_proj.bias"], ref.in_proj_bias)
    back = split_qkv(fused)
    assert back.keys() == state.keys() and all(torch.equal(back[x], state[x]) for x in state)
    del state["a.v_proj.bias"]
    with pytest.raises(UserError, match="a.v_proj.bias"):
        fuse_qkv(state)


def test_three_linears_fused_give_the_same_attention() -> None:
    """A layer written with separate q/k/v Linears, fused and loaded strictly, computes the same."""
    torch.manual_seed(1)
    layer = EncoderLayer(LayerSpec(8, 2, 16, dropout=0.0)).eval()
    foreign = split_qkv(layer.state_dict())
    fresh = EncoderLayer(LayerSpec(8, 2, 16, dropout=0.0)).eval()
    assert load_strict(fresh, fuse_qkv(foreign), source="x") == []
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(fresh(x), layer(x), rtol=0, atol=0)


def _layer() -> EncoderLayer:
    return EncoderLayer(LayerSpec(8, 2, 16))


def test_strict_loading_names_unused_missing_and_mismatched_keys() -> None:
    state = _layer().state_dict()
    with pytest.raises(UserError, match=r"^ckpt.pt: .*unused keys: extra.weight"):
        load_strict(_layer(), {**state, "extra.weight": torch.ones(1)}, source="ckpt.pt")
    partial = {k: v for k, v in state.items() if not k.startswith("ffn.fc2")}
    with pytest.raises(UserError, match="missing keys: ffn.fc2.weight, ffn.fc2.bias"):
        load_strict(_layer(), partial, source="ckpt.pt")
    wrong = {**state, "ffn.fc1.bias": torch.zeros(3)}
    with pytest.raises(UserError, match=r"shapes differ: ffn.fc1.bias \(3,\) vs \(16,\) \(hint\)"):
        load_strict(_layer(), wrong, source="ckpt.pt", hint="hint")
    message = ""
    try:
        load_strict(_layer(), {f"x{i}": torch.ones(1) for i in range(20)}, source="f")
    except UserError as err:
        message = str(err)
    assert "\n" not in message and "and 14 more" in message  # one line, however many keys


def test_strict_loading_allows_only_what_the_caller_names() -> None:
    source = _layer()
    state = {**source.state_dict(), "ffn.fc2.weight": torch.zeros(4, 16)}  # another head size
    target = _layer()
    before = target.ffn.fc2.weight.clone()
    fresh = load_strict(target, state, source="f", allow_missing=("ffn.fc2.*",), allow_unused=("ffn.fc2.*",))
    assert fresh == ["ffn.fc2.weight"]
    assert torch.equal(target.ffn.fc2.weight, before)  # kept its own initialisation
    assert torch.equal(target.ffn.fc1.weight, source.ffn.fc1.weight)
