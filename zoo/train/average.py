"""Checkpoint averaging (the paper: the base model uses the average of the last 5 checkpoints,
written at 10-minute intervals; the big model the last 20).

Floating-point tensors are averaged element-wise with float64 accumulation, then cast back to
their dtype; integer and bool tensors (step counters, index buffers) are taken from the last
state dict, since their mean is meaningless.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import torch
from torch import Tensor

from zoo.config import UserError
from zoo.train.checkpoint import load_checkpoint


def average_state_dicts(states: Iterable[dict[str, Tensor]]) -> dict[str, Tensor]:
    """The element-wise mean of state dicts with the same keys and shapes.

    `states` may be a generator: only one state dict and the running sums are held at a time.
    """
    sums: dict[str, Tensor] = {}
    last: dict[str, Tensor] = {}
    count = 0
    for state in states:
        if count and state.keys() != last.keys():
            raise ValueError(f"state dict {count} has keys {sorted(state.keys() ^ last.keys())} "
                             "that the others lack (or lacks theirs)")
        for key, value in state.items():
            if count and value.shape != last[key].shape:
                raise ValueError(f"{key}: shape {tuple(value.shape)} differs from "
                                 f"{tuple(last[key].shape)}")
            if value.is_floating_point():
                sums[key] = value.double() if count == 0 else sums[key].add_(value.double())
        last, count = state, count + 1
    if count == 0:
        raise ValueError("nothing to average")
    return {key: (sums[key] / count).to(value.dtype) if key in sums else value.clone()
            for key, value in last.items()}


def average_checkpoints(paths: list[str | Path]) -> dict[str, Tensor]:
    """The mean of the model weights (key "model") of zoo checkpoints, loaded one at a time."""
    def models() -> Iterable[dict[str, Tensor]]:
        for path in paths:
            state = load_checkpoint(path)
            if "model" not in state:
                raise UserError(f"{path}: no 'model' entry; not a zoo training checkpoint")
            yield state["model"]

    return average_state_dicts(models())
