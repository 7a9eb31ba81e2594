"""zoo.data.sample.reservoir: the size asked, the same sample for the same seed, and every item
equally likely."""

from __future__ import annotations

from collections import Counter

from zoo.data.sample import reservoir


def test_a_short_stream_is_kept_whole_and_a_long_one_cut_to_the_count():
    assert reservoir(iter(range(5)), 8, seed=0) == [0, 1, 2, 3, 4]
    sample = reservoir(iter(range(100)), 10, seed=0)
    assert len(set(sample)) == 10 and set(sample) <= set(range(100))
    assert reservoir(iter(range(100)), 10, seed=0) == sample != reservoir(iter(range(100)), 10, seed=1)


def test_every_item_is_drawn_equally_often_over_seeds():
    """3 of 10 items, 3,000 seeds: each item is expected 900 times (sd ~25); the first items,
    which fill the reservoir, get no advantage and the last no disadvantage."""
    counts = Counter(item for seed in range(3000) for item in reservoir(range(10), 3, seed))
    assert set(counts) == set(range(10))
    assert all(800 < n < 1000 for n in counts.values()), counts
