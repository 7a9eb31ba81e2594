"""Schedules against their published formulas."""

import math

import pytest
import torch

from zoo.config import ConfigError, load_config
from zoo.train.config import RunConfig, ScheduleConfig
from zoo.train.schedules import build_schedule


def rates(name: str, peak: float, steps: int, **kw) -> list[float]:
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=peak)
    sched = build_schedule(opt, ScheduleConfig(name=name, **kw), steps)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_inverse_sqrt_is_the_papers_equation_3():
    """lr = d^-0.5 min(step^-0.5, step warmup^-1.5) with optim.lr = d^-0.5 warmup^-0.5."""
    d, warmup = 512, 40
    got = rates("inverse_sqrt", d**-0.5 * warmup**-0.5, 200, warmup_steps=warmup)
    for i, lr in enumerate(got[1:], start=1):
        paper = d**-0.5 * min(i**-0.5, i * warmup**-1.5)
        assert lr == pytest.approx(paper, rel=1e-12)


def test_cosine_warms_up_then_reaches_its_floor():
    """Half cosine from the peak at the end of warm-up to the floor at total_steps."""
    total, warmup = 100, 10
    got = rates("cosine", 1.0, total, warmup_steps=warmup, min_lr_ratio=0.1)
    assert got[:warmup] == pytest.approx([(i + 1) / warmup for i in range(warmup)])
    expected = [
        0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (s - warmup) / (total - warmup)))
        for s in range(warmup, total)
    ]
    assert got[warmup:] == pytest.approx(expected)
    assert got[warmup] == pytest.approx(1.0) and got[-1] == pytest.approx(0.1, abs=1e-3)


def test_linear_is_berts_warmup_and_decay():
    got = rates("linear", 1e-4, 100, warmup_steps=10)
    assert got[:10] == pytest.approx([1e-4 * (i + 1) / 10 for i in range(10)])
    assert got[10] == pytest.approx(1e-4)
    assert got[55] == pytest.approx(1e-4 * 45 / 90)
    assert all(a > b for a, b in zip(got[10:], got[11:]))


def test_unknown_schedule_names_the_key():
    with pytest.raises(ConfigError, match="schedule.name.*choose inverse_sqrt"):
        load_config(RunConfig, overrides=["schedule.name=exponential"])


@pytest.mark.parametrize("name", ["inverse_sqrt", "constant"])
def test_a_cooldown_ramps_the_last_steps_linearly_to_zero_and_leaves_the_rest(name):
    total, cooldown = 100, 20
    plain = rates(name, 1.0, total, warmup_steps=10)
    cooled = rates(name, 1.0, total, warmup_steps=10, cooldown_steps=cooldown)
    assert cooled[: total - cooldown + 1] == plain[: total - cooldown + 1]
    for step in range(total - cooldown, total):
        assert cooled[step] == pytest.approx(plain[step] * (total - step) / cooldown)
    assert cooled[-1] == pytest.approx(plain[-1] / cooldown)


def test_a_cooldown_longer_than_the_run_names_the_key():
    with pytest.raises(ConfigError, match="schedule.cooldown_steps.*between 0 and train.max_steps"):
        rates("constant", 1.0, 3, cooldown_steps=4)
