"""A fixed-size uniform sample of a stream too long to hold (calibration examples from a
training corpus of millions of lines), the same for the same seed."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


def reservoir(items: Iterable[T], count: int, seed: int) -> list[T]:
    """`count` items drawn uniformly without replacement from `items` (all of them if fewer), in
    one pass with `count` held at a time (Vitter's algorithm R)."""
    rng, kept = random.Random(seed), []
    for seen, item in enumerate(items):
        if seen < count:
            kept.append(item)
        else:
            slot = rng.randrange(seen + 1)
            if slot < count:
                kept[slot] = item
    return kept
