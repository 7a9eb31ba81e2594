import numpy as np
import pytest

from zoo.config import UserError
from zoo.data.batching import accumulation_for, shard, token_batches


def random_lengths(seed: int, n: int, high: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(1, high, n), rng.integers(1, high, n)


def cost(batch: np.ndarray, src: np.ndarray, tgt: np.ndarray) -> int:
    return len(batch) * int(max(src[batch].max(), tgt[batch].max()))


@pytest.mark.parametrize(
    "seed,n,high,max_tokens",
    [(0, 1, 5, 5), (1, 257, 40, 64), (2, 1000, 100, 512), (3, 500, 8, 7), (4, 2000, 300, 300)],
)
def test_every_example_once_and_no_batch_over_budget(seed, n, high, max_tokens):
    src, tgt = random_lengths(seed, n, min(high, max_tokens + 1))
    for epoch in range(3):
        batches = token_batches(src, tgt, max_tokens, seed=seed, epoch=epoch)
        assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(n))
        assert all(len(b) > 0 and cost(b, src, tgt) <= max_tokens for b in batches)


def test_unshuffled_batches_are_sorted_and_greedy():
    src, tgt = random_lengths(5, 600, 50)
    batches = token_batches(src, tgt, 200, shuffle=False)
    longest = np.maximum(src, tgt)[np.concatenate(batches)]
    assert np.all(np.diff(longest) >= 0)
    for batch, following in zip(batches, batches[1:]):  # a batch ends only when the next one would not fit
        assert cost(np.append(batch, following[0]), src, tgt) > 200


def test_order_is_a_function_of_seed_and_epoch():
    src, tgt = random_lengths(6, 800, 30)

    def key(seed, epoch):
        return [b.tolist() for b in token_batches(src, tgt, 128, seed=seed, epoch=epoch)]

    assert key(0, 0) == key(0, 0)
    assert key(0, 0) != key(0, 1)
    assert key(0, 0) != key(1, 0)


def test_bucketing_pads_less_than_random_batches():
    src, tgt = random_lengths(7, 3000, 100)
    batches = token_batches(src, tgt, 1024, seed=0)
    padded = sum(cost(b, src, tgt) for b in batches)
    rng = np.random.default_rng(0)
    random_split = np.array_split(rng.permutation(3000), len(batches))
    assert padded < 0.8 * sum(cost(b, src, tgt) for b in random_split)


def test_example_over_budget_is_named():
    with pytest.raises(UserError, match="example 2 has 9 tokens"):
        token_batches([1, 2, 3, 4], [1, 2, 9, 1], 8)
    with pytest.raises(ValueError, match="at least 1"):
        token_batches([1, 0], [1, 0], 8)


@pytest.mark.parametrize("count,world_size", [(10, 1), (10, 3), (9, 3), (11, 4), (4, 4)])
def test_shard_gives_every_rank_the_same_count(count, world_size):
    batches = list(range(count))
    shards = [shard(batches, rank, world_size) for rank in range(world_size)]
    assert {len(s) for s in shards} == {count // world_size}
    taken = sorted(b for s in shards for b in s)
    assert len(set(taken)) == len(taken) == count - count % world_size
    assert shards == [shard(batches, rank, world_size) for rank in range(world_size)]


def test_shard_needs_a_batch_per_rank():
    with pytest.raises(UserError, match="only 2 batches for 3 ranks"):
        shard([0, 1], 0, 3)
    with pytest.raises(ValueError):
        shard([0, 1], 2, 2)


@pytest.mark.parametrize(
    "target,max_tokens,world_size",
    [(25000, 4096, 1), (25000, 4096, 8), (25000, 3584, 8), (1000, 4096, 1), (8192, 4096, 2), (8193, 4096, 2)],
)
def test_accumulation_reaches_the_target_with_the_fewest_micro_batches(target, max_tokens, world_size):
    accum = accumulation_for(target, max_tokens, world_size)
    assert accum * max_tokens * world_size >= target
    assert accum == 1 or (accum - 1) * max_tokens * world_size < target
