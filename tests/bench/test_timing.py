"""bench.timing.interleaved_medians: rounds alternate the callables, and primers run untimed
right before each timed call."""

import time

from bench.timing import interleaved_medians


def test_primers_run_before_each_timed_call_and_are_not_timed():
    calls = []
    fns = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    primers = {"b": lambda: calls.append("prime b") or time.sleep(0.05)}
    seconds = interleaved_medians(fns, repeats=2, warmup=1, primers=primers)
    assert calls == ["a", "b"] + ["a", "prime b", "b"] * 2  # the warmup round is not primed
    assert seconds["b"] < 0.05
