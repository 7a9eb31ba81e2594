"""Every combination of the variant tables builds, runs and trains, as timm sweeps its model
list: norms x activations x positions x pre/post-norm x window."""

import itertools

import pytest
import torch

from zoo.blocks import (
    ACTIVATIONS,
    NORMS,
    POSITIONS,
    Decoder,
    Encoder,
    LayerSpec,
    SequenceEmbedding,
    init_transformer_,
    padding_mask,
)

D, H, V, PAD = 16, 2, 11, 0
VARIANTS = list(
    itertools.product(sorted(NORMS), sorted(ACTIVATIONS), sorted(POSITIONS), [False, True], [None, 1])
)


@pytest.mark.parametrize("norm,activation,positions,pre_norm,window", VARIANTS)
def test_variant_runs_backward_without_nans_and_trains_every_parameter(
    norm, activation, positions, pre_norm, window
):
    torch.manual_seed(0)
    spec = LayerSpec(
        D,
        H,
        2 * D,
        dropout=0.1,
        attn_dropout=0.1,
        ffn_dropout=0.1,
        activation=activation,
        norm=norm,
        pre_norm=pre_norm,
        window=window,
    )
    embed = SequenceEmbedding(V, D, max_len=16, padding_idx=PAD, positions=positions)
    encoder = Encoder.uniform(2, spec)  # drop path could drop a whole branch of a 2-row batch
    decoder = Decoder.uniform(2, spec)
    out = torch.nn.Linear(D, V)
    model = torch.nn.ModuleList([embed, encoder, decoder, out])
    init_transformer_(model)
    src = torch.tensor([[3, 4, 5, 6, 7, 8], [3, 4, 5, PAD, PAD, PAD]])
    tgt = torch.tensor([[1, 9, 9, 2], [1, 10, 2, PAD]])
    mask = padding_mask(src, PAD)
    memory = encoder(embed(src), pad_mask=mask)
    logits = out(decoder(embed(tgt), memory, memory_mask=mask))
    assert logits.shape == (2, 4, V)
    assert torch.isfinite(logits).all()
    torch.nn.functional.cross_entropy(logits.reshape(-1, V), tgt.roll(-1, 1).reshape(-1)).backward()
    silent = [
        name
        for name, p in model.named_parameters()
        if p.grad is None or not torch.isfinite(p.grad).all() or p.grad.abs().sum() == 0
    ]
    assert silent == []
