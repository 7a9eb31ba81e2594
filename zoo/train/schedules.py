"""Learning-rate schedules as multipliers of the peak rate (for LambdaLR)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from zoo.config import ConfigError
from zoo.train.config import ScheduleConfig


def inverse_sqrt(warmup_steps: int) -> Callable[[int], float]:
    """The paper's eq. 3: lr = d^-0.5 min(step^-0.5, step warmup^-1.5), here normalised so the
    peak (at step == warmup) is 1; the recipe's `optim.lr` is then d^-0.5 warmup^-0.5."""
    warmup = max(1, warmup_steps)

    def factor(step: int) -> float:
        step = max(1, step)
        return min(step / warmup, math.sqrt(warmup / step))

    return factor


def cosine(warmup_steps: int, total_steps: int, min_ratio: float) -> Callable[[int], float]:
    """Linear warm-up, then a half cosine from 1 down to `min_ratio` at `total_steps`."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def linear(warmup_steps: int, total_steps: int) -> Callable[[int], float]:
    """BERT's schedule: linear warm-up to the peak, then linear decay to 0 at `total_steps`."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return factor


def constant(warmup_steps: int) -> Callable[[int], float]:
    def factor(step: int) -> float:
        return min(1.0, (step + 1) / warmup_steps) if warmup_steps > 0 else 1.0

    return factor


SCHEDULES: dict[str, Callable[[ScheduleConfig, int], Callable[[int], float]]] = {
    "inverse_sqrt": lambda cfg, total: inverse_sqrt(cfg.warmup_steps),
    "cosine": lambda cfg, total: cosine(cfg.warmup_steps, total, cfg.min_lr_ratio),
    "linear": lambda cfg, total: linear(cfg.warmup_steps, total),
    "constant": lambda cfg, total: constant(cfg.warmup_steps),
}


def with_cooldown(
    factor: Callable[[int], float], cooldown_steps: int, total_steps: int
) -> Callable[[int], float]:
    """`factor` times a linear ramp from 1 to 0 over the last `cooldown_steps` before
    `total_steps`: the decay phase of warmup-stable-decay schedules (Hägele et al. 2024), which
    anneals a run whose schedule never reaches 0 (inverse_sqrt, constant), wherever it stops."""

    def cooled(step: int) -> float:
        return factor(step) * min(1.0, max(0.0, (total_steps - step) / cooldown_steps))

    return cooled


def build_schedule(
    optimizer: torch.optim.Optimizer, cfg: ScheduleConfig, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """LambdaLR multiplying `optim.lr` by the schedule named `cfg.name` (see SCHEDULES), cooled
    down over the last `cfg.cooldown_steps`."""
    if not 0 <= cfg.cooldown_steps <= total_steps:
        raise ConfigError(
            f"key 'schedule.cooldown_steps': {cfg.cooldown_steps} must lie between 0 and "
            f"train.max_steps ({total_steps})"
        )
    factor = SCHEDULES[cfg.name](cfg, total_steps)
    if cfg.cooldown_steps:
        factor = with_cooldown(factor, cfg.cooldown_steps, total_steps)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
