"""zoo BERT alone: masked-position logits, padding, initialisation (its Hugging Face parity is in
tests/zoo/convert/test_hf_bert.py)."""

from __future__ import annotations

import pytest
import torch

from zoo.models.bert import Bert, BertModelConfig, build_bert, fixed_width_positions


def tiny(num_layers: int = 2, dim: int = 48, num_heads: int = 4, ffn_dim: int = 80) -> Bert:
    """A small BERT with noise on every parameter (biases and norms too), in eval mode."""
    torch.manual_seed(0)
    cfg = BertModelConfig(num_layers=num_layers, dim=dim, num_heads=num_heads, ffn_dim=ffn_dim, max_len=40)
    model = build_bert(cfg, 97, 0)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    return model.eval()


def inputs(vocab_size: int = 97, batch: int = 3, length: int = 17):
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, vocab_size, (batch, length), generator=generator)
    types = (torch.arange(length) >= length // 2).long().expand(batch, -1).clone()
    mask = torch.ones(batch, length, dtype=torch.bool)
    mask[1, 11:] = False  # a padded row
    ids[1, 11:] = 0
    types[1, 11:] = 0
    return ids, types, mask


def test_masked_positions_select_rows_of_the_full_logits():
    model = tiny(num_layers=1, dim=32, num_heads=2, ffn_dim=64)
    ids, types, mask = inputs()
    chosen = torch.zeros_like(mask)
    chosen[0, [1, 5]] = chosen[2, 3] = True
    with torch.no_grad():
        full = model(ids, types, mask)
        some = model(ids, types, mask, masked_positions=chosen)
    torch.testing.assert_close(some.mlm, full.mlm[chosen])
    torch.testing.assert_close(some.nsp, full.nsp)


def test_masked_positions_as_indices_gather_the_full_logits():
    model = tiny(num_layers=1, dim=32, num_heads=2, ffn_dim=64)
    ids, types, mask = inputs()
    positions = torch.tensor([[1, 5, 0], [3, 3, 2], [7, 0, 4]])
    with torch.no_grad():
        full = model(ids, types, mask)
        some = model(ids, types, mask, masked_positions=positions)
    expected = torch.stack([full.mlm[row, index] for row, index in enumerate(positions)])
    torch.testing.assert_close(some.mlm, expected)


def test_masked_positions_as_indices_trace_as_one_graph():
    import torch._dynamo as dynamo

    model = tiny(num_layers=1, dim=32, num_heads=2, ffn_dim=64)
    ids, types, mask = inputs()
    positions = torch.tensor([[1, 5, 0], [3, 3, 2], [7, 0, 4]])
    explained = dynamo.explain(model)(ids, types, mask, masked_positions=positions)
    assert explained.graph_break_count == 0 and explained.graph_count == 1


def test_padding_does_not_change_real_positions():
    model = tiny(num_layers=3)
    ids, types, mask = inputs()
    with torch.no_grad():
        alone = model(ids[1:2, :11], types[1:2, :11]).mlm
        padded = model(ids, types, mask).mlm[1:2, :11]
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-5)


def test_initialisation_and_tied_decoder():
    model = build_bert(BertModelConfig(num_layers=2, dim=256, num_heads=4, ffn_dim=512), 3000, 0)
    weight = model.embeddings.tokens.weight
    assert abs(weight[1:].std().item() - 0.02) < 1e-3 and (weight[0] == 0).all()
    assert abs(model.encoder.layers[0].ffn.fc1.weight.std().item() - 0.02) < 1e-3
    assert (model.mlm_head.bias == 0).all() and (model.encoder.layers[1].ffn_res.norm.weight == 1).all()


def test_the_mlm_decoder_is_the_word_embedding_matrix():
    """Moving word 7's embedding moves only word 7's MLM logit, by the head's transformed
    hidden state times the move, when word 7 is not in the input (so the encoder sees nothing)."""
    torch.manual_seed(0)
    model = build_bert(BertModelConfig(num_layers=1, dim=16, num_heads=2, ffn_dim=32), 40, 0).eval()
    ids = torch.tensor([[2, 3, 4, 5, 6]])
    before = model(ids).mlm
    delta = torch.randn(16)
    with torch.no_grad():
        model.embeddings.tokens.weight[7] += delta
    after = model(ids).mlm
    head = model.mlm_head
    transformed = head.norm(head.act(head.dense(model.encode(ids))))
    torch.testing.assert_close(after[..., 7] - before[..., 7], transformed @ delta)
    others = torch.arange(40) != 7
    torch.testing.assert_close(after[..., others], before[..., others], rtol=0, atol=0)


@pytest.mark.parametrize("width", [3, 20])  # 20: wider than the 17 positions of a row
def test_fixed_width_positions_list_each_rows_chosen_positions_in_order(width):
    chosen = torch.rand(4, 17, generator=torch.Generator().manual_seed(0)) < 0.15
    chosen[0, [2, 9, 16]] = True
    chosen[3] = False
    chosen[2] = False
    chosen[2, [0, 4]] = True
    fixed = fixed_width_positions(chosen, width)
    assert fixed.index.shape == fixed.taken.shape == (4, width)
    for row in range(4):
        expected = chosen[row].nonzero().flatten().tolist()[:width]
        assert fixed.index[row][fixed.taken[row]].tolist() == expected
        assert (fixed.index[row][~fixed.taken[row]] == 0).all()
