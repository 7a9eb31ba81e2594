"""Token embeddings (sqrt(D) scale, padding row, tying) and the input layer of sequence models."""

import math

import pytest
import torch
from torch import nn

from zoo.blocks import SequenceEmbedding, SinusoidalPositions, TokenEmbedding


def test_scaled_by_sqrt_dim_with_unit_variance_output_and_zero_padding_row():
    torch.manual_seed(0)
    emb = TokenEmbedding(1000, 256, padding_idx=0)
    tokens = torch.arange(1, 1000)
    torch.testing.assert_close(emb(tokens), nn.functional.embedding(tokens, emb.weight) * 16.0)
    assert emb(tokens).std().item() == pytest.approx(1.0, rel=0.05)  # N(0, D^-1/2) * sqrt(D)
    assert emb.weight[0].abs().sum() == 0
    emb(torch.tensor([0, 0, 5])).sum().backward()
    assert emb.weight.grad[0].abs().sum() == 0  # padding gets no gradient
    assert TokenEmbedding(10, 4, scale=False).scale == 1.0


def test_sequence_embedding_adds_positions_at_the_offset_and_shares_tokens():
    torch.manual_seed(0)
    src = SequenceEmbedding(20, 8, max_len=16, padding_idx=0)
    tgt = SequenceEmbedding(20, 8, max_len=16, token_embedding=src.tokens)
    assert tgt.tokens is src.tokens
    tokens = torch.tensor([[3, 4, 5, 6]])
    table = SinusoidalPositions(16, 8).table
    torch.testing.assert_close(src(tokens), src.tokens(tokens) + table[:4])
    torch.testing.assert_close(src(tokens[:, 2:], offset=2), src(tokens)[:, 2:])
    with pytest.raises(ValueError, match="positions"):
        SequenceEmbedding(20, 8, max_len=16, positions="rotary")
    assert math.isclose(src.tokens.scale, math.sqrt(8))


def test_a_position_scale_multiplies_the_sinusoids_and_is_refused_for_a_learned_table():
    torch.manual_seed(0)
    plain = SequenceEmbedding(20, 8, max_len=16)
    scaled = SequenceEmbedding(20, 8, max_len=16, position_scale=0.1, token_embedding=plain.tokens)
    tokens = torch.tensor([[3, 4, 5, 6]])
    table = SinusoidalPositions(16, 8).table
    torch.testing.assert_close(scaled(tokens), plain.tokens(tokens) + 0.1 * table[:4])
    with pytest.raises(ValueError, match="sinusoidal"):
        SequenceEmbedding(20, 8, max_len=16, positions="learned", position_scale=0.1)
