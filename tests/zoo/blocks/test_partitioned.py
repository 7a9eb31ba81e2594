"""The factored encoder (Kitaev & Klein 2018) against its definition: content and position
projections apart, attention scores the sum of a content and a position dot product."""

import math

import pytest
import torch

from zoo.blocks import ConcatPositions, Encoder, LayerSpec, init_transformer_, partition_

DIM, HEADS = 8, 2


def factored_encoder(**spec) -> Encoder:
    torch.manual_seed(0)
    encoder = init_transformer_(Encoder.uniform(1, LayerSpec(DIM, HEADS, 12, dropout=0.0, **spec)))
    return partition_(encoder).eval()


def test_attention_scores_are_a_content_product_plus_a_position_product() -> None:
    attn = factored_encoder().layers[0].self_attn
    full_w = attn.qkv_proj.parametrizations.weight.original  # dense: the zeroed blocks hold values too
    full_o, bias, bias_o = (
        attn.out_proj.parametrizations.weight.original,
        attn.qkv_proj.bias,
        attn.out_proj.bias,
    )
    x = torch.randn(3, 5, DIM)
    half, dh = DIM // 2, DIM // HEADS
    parts = {"c": slice(0, half), "p": slice(half, DIM)}
    outputs = {"c": [], "p": []}
    for h in range(HEADS):
        rows = {
            "c": torch.arange(h * dh, h * dh + dh // 2),
            "p": torch.arange(h * dh + dh // 2, (h + 1) * dh),
        }

        def project(which: int, part: str) -> torch.Tensor:
            r = rows[part] + which * DIM  # noqa: B023 (called within this iteration)
            return x[..., parts[part]] @ full_w[r][:, parts[part]].T + bias[r]

        scores = sum(project(0, p) @ project(1, p).transpose(-2, -1) for p in "cp") / math.sqrt(dh)
        weights = scores.softmax(-1)
        for p in "cp":
            outputs[p].append(weights @ project(2, p))
    expected = torch.cat(
        [torch.cat(outputs[p], -1) @ full_o[parts[p]][:, _head_features(p)].T for p in "cp"], -1
    )
    torch.testing.assert_close(attn(x), expected + bias_o)


def _head_features(part: str) -> torch.Tensor:
    dh = DIM // HEADS
    offset = 0 if part == "c" else dh // 2
    return torch.cat([torch.arange(h * dh + offset, h * dh + offset + dh // 2) for h in range(HEADS)])


def test_the_feed_forward_maps_each_half_to_itself() -> None:
    ffn = factored_encoder().layers[0].ffn
    x = torch.randn(2, 4, DIM)
    moved = x.clone()
    moved[..., DIM // 2 :] += torch.randn(2, 4, DIM // 2)
    torch.testing.assert_close(ffn(moved)[..., : DIM // 2], ffn(x)[..., : DIM // 2])
    assert not torch.allclose(ffn(moved)[..., DIM // 2 :], ffn(x)[..., DIM // 2 :])


def test_training_keeps_the_halves_apart() -> None:
    encoder = factored_encoder().train()
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=0.1, weight_decay=0.1)
    encoder(torch.randn(2, 5, DIM)).square().sum().backward()
    optimizer.step()
    weight = encoder.layers[0].ffn.fc1.weight
    assert weight[:6, DIM // 2 :].abs().max() == 0 and weight[6:, : DIM // 2].abs().max() == 0
    assert weight[:6, : DIM // 2].abs().min() > 0


def test_concat_positions_puts_the_positions_beside_the_content() -> None:
    join = ConcatPositions(10, DIM, positions="learned").eval()
    content = torch.randn(2, 3, DIM // 2)
    x = join(content)
    torch.testing.assert_close(x[..., : DIM // 2], content)
    torch.testing.assert_close(x[1, :, DIM // 2 :], join.positions.weight[:3])


def test_shapes_it_cannot_factor_are_refused() -> None:
    with pytest.raises(ValueError, match="divisible by 2 x num_heads"):
        partition_(Encoder.uniform(1, LayerSpec(6, 2, 12)))
    with pytest.raises(ValueError, match="full self-attention"):
        partition_(Encoder.uniform(1, LayerSpec(DIM, HEADS, 12, window=2)))
