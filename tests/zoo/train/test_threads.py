"""train.threads=0 takes the cores left idle at start, so a run beside a busy job does not
spin-wait against it; a number given by the recipe or OMP_NUM_THREADS wins."""

import pytest

from zoo.train import threads


@pytest.mark.parametrize(
    "cores, load, expected",
    [(2, 0.0, 2), (2, 0.4, 2), (2, 1.0, 1), (2, 1.7, 1), (2, 6.0, 1), (16, 3.2, 13), (4, -0.0, 4)],
)
def test_auto_threads_are_the_idle_cores_and_at_least_one(cores, load, expected):
    assert threads.auto_threads(cores, load) == expected


def test_the_recipe_then_omp_num_threads_then_the_load_decide(monkeypatch):
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.2, 0.0, 0.0))
    monkeypatch.setattr(threads, "available_cores", lambda: 2)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads.choose_threads(5)[0] == 5
    assert threads.choose_threads(0) == (3, "OMP_NUM_THREADS")
    for unset in ("", "junk", "0"):
        monkeypatch.setenv("OMP_NUM_THREADS", unset)
        count, why = threads.choose_threads(0)
        assert count == 1 and "load average 1.2" in why
