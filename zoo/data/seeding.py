"""Per-example seeding: every random choice of a data pipeline (masking, augmentation, word
dropout, synthetic examples, the epoch's order) is drawn from its own stream, a pure function of
(run seed, epoch, stream, example index).

A stream never depends on the batch an example lands in, on the order examples are loaded, on
the number of workers or ranks, or on the training RNG, so a run resumed mid-epoch sees exactly
the batches an uninterrupted one would, and any example can be regenerated alone.

The key is numpy's SeedSequence of (seed, epoch, stream, index), which mixes every bit of every
part: nearby keys give unrelated streams. Trailing zero parts are padding (the stream of
(seed, epoch) is that of (seed, epoch, 0, 0)), so per-epoch draws use index 0 of their stream.

Args shared by the helpers:
    seed: the run's seed (`train.seed`), or a fixed seed for a held-out set.
    epoch: the epoch.
    index: the example's position in the epoch's data (where a task draws a whole batch at
        once, the batch's); 0 for a per-epoch draw.
    stream: a small integer naming the purpose, keeping a task's random choices apart (BERT:
        0 its pairs, 1 its masks). Stream 0, index 0 is the epoch's order (zoo.data.batching).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

ORDER = 0  # the stream of an epoch's order (with index 0)


def _key(seed: int, epoch: int, index: int, stream: int) -> np.random.SeedSequence:
    parts = (seed, epoch, stream, index)
    if min(parts) < 0:
        raise ValueError(f"seed, epoch, stream and index must be non-negative, not {parts}")
    return np.random.SeedSequence(parts)


def example_rng(seed: int, epoch: int, index: int = 0, *, stream: int = ORDER) -> np.random.Generator:
    """The numpy stream of one example (or of the epoch, with index 0)."""
    return np.random.default_rng(_key(seed, epoch, index, stream))


def example_seed(seed: int, epoch: int, index: int = 0, *, stream: int = ORDER) -> int:
    """A 63-bit integer seed for one example's stream, for generators seeded by an integer."""
    return int(_key(seed, epoch, index, stream).generate_state(1, np.uint64)[0]) >> 1


def example_generator(seed: int, epoch: int, index: int = 0, *, stream: int = ORDER) -> torch.Generator:
    """The torch (CPU) stream of one example (or of the epoch, with index 0)."""
    return torch.Generator().manual_seed(example_seed(seed, epoch, index, stream=stream))


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with torch's default CPU generator seeded, then restore its state: for code
    that draws from the global generator (torchvision's random transforms), under `example_seed`.

    The generator is used directly: `torch.manual_seed` and `fork_rng` also visit every
    accelerator backend and cost about a millisecond, more than a small image's transform.
    """
    generator = torch.default_generator
    state = generator.get_state()
    generator.manual_seed(seed)
    try:
        yield
    finally:
        generator.set_state(state)
