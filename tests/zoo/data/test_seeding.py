"""Per-example seeding: one stream per (seed, epoch, stream, index), whatever else is drawn."""

import numpy as np
import pytest
import torch

from zoo.data.seeding import example_generator, example_rng, example_seed, seeded


def _draws(seed: int, epoch: int, index: int, stream: int = 0) -> tuple[list[float], list[float]]:
    """The first draws of an example's numpy and torch streams."""
    numpy = example_rng(seed, epoch, index, stream=stream).random(4).tolist()
    generator = example_generator(seed, epoch, index, stream=stream)
    return numpy, torch.rand(4, generator=generator).tolist()


def test_same_key_same_stream():
    assert _draws(3, 1, 7) == _draws(3, 1, 7)
    assert example_seed(3, 1, 7) == example_seed(3, 1, 7)


@pytest.mark.parametrize(
    "other",
    [(4, 1, 7, 0), (3, 2, 7, 0), (3, 1, 8, 0), (3, 1, 7, 1)],
    ids=["seed", "epoch", "index", "stream"],
)
def test_any_other_key_gives_another_stream(other):
    numpy, torch_draws = _draws(3, 1, 7)
    other_numpy, other_torch = _draws(*other)
    assert numpy != other_numpy and torch_draws != other_torch


def test_streams_do_not_depend_on_the_order_of_calls_or_the_global_rng():
    """Examples drawn in any order, interleaved, after other draws: each sees its own stream."""
    keys = [(0, epoch, index) for epoch in range(2) for index in range(5)]
    forward = {key: _draws(*key) for key in keys}
    torch.manual_seed(123)
    np.random.seed(123)
    torch.rand(10), np.random.random(10)
    backward = {key: _draws(*key) for key in reversed(keys)}
    assert forward == backward
    assert len({str(draws) for draws in forward.values()}) == len(keys)


def test_seeds_are_63_bit_and_spread():
    seeds = {example_seed(0, 0, index) for index in range(1000)}
    assert len(seeds) == 1000 and all(0 <= s < 2**63 for s in seeds)
    assert max(seeds) > 2**62  # mixed: neighbouring keys land far apart


def test_an_epoch_stream_is_index_zero():
    """(seed, epoch) alone, as zoo.data.batching draws an epoch's order."""
    assert example_rng(5, 2).random() == example_rng(5, 2, 0, stream=0).random()
    assert example_rng(5, 2).random() == np.random.default_rng([5, 2]).random()


def test_negative_parts_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        example_rng(-1, 0, 0)


def test_seeded_runs_the_block_under_the_seed_and_restores_the_global_generator():
    torch.manual_seed(0)
    with seeded(example_seed(1, 2, 3)):
        inside = torch.rand(3)
    after = torch.rand(3)
    torch.manual_seed(0)
    assert torch.equal(after, torch.rand(3))
    with seeded(example_seed(1, 2, 3)):
        assert torch.equal(inside, torch.rand(3))
