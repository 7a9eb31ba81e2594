"""bench.timing.interleaved_medians: rounds alternate the callables, and primers run untimed
right before each timed call."""

from types import SimpleNamespace

from bench import timing


def test_primers_run_before_each_timed_call_and_are_not_timed(monkeypatch):
    # A fake clock that only the callables move: a takes 1 s, b 2 s, b's primer 100 s.
    now = [0.0]
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    calls = []

    def step(name: str, seconds: float):
        return lambda: calls.append(name) or now.__setitem__(0, now[0] + seconds)

    fns = {"a": step("a", 1.0), "b": step("b", 2.0)}
    seconds = timing.interleaved_medians(fns, repeats=2, warmup=1, primers={"b": step("prime b", 100.0)})
    assert calls == ["a", "b"] + ["a", "prime b", "b"] * 2  # the warmup round is not primed
    assert seconds == {"a": 1.0, "b": 2.0}
