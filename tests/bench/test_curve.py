"""bench.curve: a run's wall-clock minutes leave out the time it spent stopped."""

from __future__ import annotations

import pytest

from bench.curve import running_minutes


def test_a_stop_between_records_counts_as_one_usual_interval() -> None:
    steady = [{"time": 100.0 + 60 * k} for k in range(1, 6)]
    assert running_minutes(steady, start=100.0) == pytest.approx([1, 2, 3, 4, 5])
    stopped = steady[:2] + [{"time": r["time"] + 3600} for r in steady[2:]]  # an hour stopped after 2
    assert running_minutes(stopped, start=100.0) == pytest.approx([1, 2, 3, 4, 5])


def test_a_slower_stretch_is_still_counted() -> None:
    records = [{"time": t} for t in (60.0, 120.0, 300.0, 360.0)]  # one interval 3x the usual
    assert running_minutes(records, start=0.0) == pytest.approx([1, 2, 5, 6])
