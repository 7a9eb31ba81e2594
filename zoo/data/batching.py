"""Token-based, length-bucketed batching for sequence pairs (fairseq's `max_tokens`).

A batch is a set of example indices whose padded size fits a token budget: with B examples
padded to the longest source S and longest target T, it costs B * max(S, T) tokens. Sorting by
length before packing keeps padding small; shuffling the packed batches (not the examples) keeps
that efficiency while giving every epoch a different order. Everything is a pure function of
(lengths, budget, seed, epoch), so every rank and every resumed run sees the same batches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from zoo.config import UserError
from zoo.data.seeding import example_rng

T = TypeVar("T")


def token_batches(
    src_lengths: Sequence[int] | np.ndarray,
    tgt_lengths: Sequence[int] | np.ndarray,
    max_tokens: int,
    *,
    seed: int = 0,
    epoch: int = 0,
    shuffle: bool = True,
) -> list[np.ndarray]:
    """Pack examples into batches of at most `max_tokens` padded tokens.

    Examples are sorted by length (longer side, then source, then target; ties broken at random
    when shuffling), packed greedily in that order, and the batches are shuffled. Every example
    lands in exactly one batch.

    Args:
        src_lengths, tgt_lengths: per-example lengths in tokens, as they will be padded.
        max_tokens: budget per batch: batch_size * max(longest source, longest target).
        seed, epoch: the order is a deterministic function of both.
        shuffle: False gives the sorted order with no randomness (for evaluation).

    Returns:
        A list of int64 arrays of example indices.

    Raises:
        UserError: an example alone exceeds the budget (the message names its index).
    """
    src = np.asarray(src_lengths, dtype=np.int64)
    tgt = np.asarray(tgt_lengths, dtype=np.int64)
    if src.shape != tgt.shape or src.ndim != 1:
        raise ValueError(f"need two 1-D length arrays of equal size, got {src.shape} and {tgt.shape}")
    longest = np.maximum(src, tgt)
    if longest.size and longest.min() < 1:
        raise ValueError("every example needs a length of at least 1 (count EOS)")
    over = np.flatnonzero(longest > max_tokens)
    if over.size:
        raise UserError(
            f"example {over[0]} has {longest[over[0]]} tokens, more than the batch "
            f"budget data.max_tokens={max_tokens}: raise it or lower data.max_len"
        )
    rng = example_rng(seed, epoch)  # the epoch's order stream
    tiebreak = rng.permutation(src.size) if shuffle else np.arange(src.size)
    order = np.lexsort((tiebreak, tgt, src, longest))  # the last key sorts first
    batches = _pack(order, longest[order], max_tokens)
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def _pack(order: np.ndarray, sorted_lengths: np.ndarray, max_tokens: int) -> list[np.ndarray]:
    # Lengths ascend, so a batch's width is its last example's length and its cost
    # (size * width) only grows as it takes more: the first example that does not fit ends it.
    batches, start = [], 0
    while start < order.size:
        window = sorted_lengths[start : start + max_tokens // sorted_lengths[start]]
        fits = np.arange(1, window.size + 1) * window <= max_tokens
        size = window.size if fits.all() else int(np.argmin(fits))
        batches.append(order[start : start + size])
        start += size
    return batches


def shard(batches: Sequence[T], rank: int, world_size: int) -> list[T]:
    """This rank's share: every `world_size`-th batch from `rank`, the same count on every rank.

    The last `len(batches) % world_size` batches are dropped, so no rank waits for another.

    Raises:
        UserError: fewer batches than ranks.
    """
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} outside world of size {world_size}")
    per_rank = len(batches) // world_size
    if per_rank == 0:
        raise UserError(f"only {len(batches)} batches for {world_size} ranks: lower data.max_tokens")
    return list(batches[rank : per_rank * world_size : world_size])


def accumulation_for(target_tokens: int, max_tokens: int, world_size: int) -> int:
    """Micro-batches per optimizer step so that one step sees about `target_tokens` per side.

    A full batch holds up to `max_tokens` source and `max_tokens` target tokens (padding
    included), so a step of `grad_accum` micro-batches on `world_size` ranks holds up to
    `grad_accum * world_size * max_tokens`. The paper's 25,000 source + 25,000 target tokens is
    `target_tokens=25000`; real tokens fall a little short of the budget because of padding.
    """
    if min(target_tokens, max_tokens, world_size) <= 0:
        raise ValueError("target_tokens, max_tokens and world_size must be positive")
    return max(1, math.ceil(target_tokens / (max_tokens * world_size)))
