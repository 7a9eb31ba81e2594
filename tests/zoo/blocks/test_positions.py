"""Positional encodings: the paper's formula, offsets while decoding, bounds, grid resampling."""

import math

import pytest
import torch

from zoo.blocks import POSITIONS, LearnedPositions, SinusoidalPositions, resample_grid


def test_sinusoidal_table_is_the_papers_formula():
    pe = SinusoidalPositions(50, 16)
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert pe.table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe.table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert not list(pe.parameters()) and "table" not in pe.state_dict()  # fixed, not saved


@pytest.mark.parametrize("kind", sorted(POSITIONS))
def test_offset_rows_equal_the_slice_of_the_full_table(kind):
    torch.manual_seed(0)
    pe = POSITIONS[kind](20, 8)
    full = pe(12)
    assert full.shape == (12, 8)
    for offset in (0, 3, 11):  # decoding one token at a time stays aligned with the full pass
        torch.testing.assert_close(pe(1, offset)[0], full[offset], rtol=0, atol=0)
    with pytest.raises(ValueError, match="max_len"):
        pe(5, 16)


def test_learned_positions_are_a_trained_parameter():
    pe = LearnedPositions(10, 4)
    pe(3, 2).sum().backward()
    assert pe.weight.grad[2:5].abs().sum() > 0 and pe.weight.grad[[0, 1, 5]].abs().sum() == 0


def test_resample_grid_keeps_same_size_and_refuses_non_square():
    table = torch.randn(16, 3)
    assert resample_grid(table, (4, 4)) is table
    assert resample_grid(table, (6, 5)).shape == (30, 3)
    constant = torch.ones(16, 3)
    torch.testing.assert_close(resample_grid(constant, (7, 7)), torch.ones(49, 3))
    with pytest.raises(ValueError, match="square"):
        resample_grid(torch.randn(15, 3), (4, 4))
