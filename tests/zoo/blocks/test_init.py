"""The paper's initialisation: Xavier per q/k/v block, zero biases, unit norms, embeddings kept."""

import math

import torch

from zoo.blocks import Encoder, LayerSpec, TokenEmbedding, init_transformer_


def test_xavier_bounds_per_block_zero_biases_unit_norms():
    torch.manual_seed(0)
    model = torch.nn.ModuleDict(
        {"enc": Encoder.uniform(2, LayerSpec(64, 4, 256, pre_norm=True)), "emb": TokenEmbedding(100, 64)}
    )
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(3.0)
    init_transformer_(model)
    layer = model["enc"].layers[0]
    bound = math.sqrt(6 / (64 + 64))  # each q, k, v block is square, like three projections
    for block in layer.self_attn.qkv_proj.weight.chunk(3):
        assert block.abs().max() <= bound and block.abs().max() > 0.9 * bound
    fc1 = layer.ffn.fc1.weight
    assert fc1.abs().max() <= math.sqrt(6 / (64 + 256)) and fc1.abs().max() > 0.9 * math.sqrt(6 / 320)
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            assert p.abs().max() == 0, name
        elif "norm" in name:
            assert torch.equal(p, torch.ones_like(p)), name
    emb = model["emb"].weight
    assert abs(emb.std().item() - 64**-0.5) < 0.01  # TokenEmbedding's own N(0, D^-1/2)
