"""The one way any code runs a model for evaluation or inference."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """bf16 autocast on CPU or GPU when precision == "bf16", else a no-op."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")


@contextlib.contextmanager
def evaluation(model: nn.Module, precision: str = "fp32") -> Iterator[nn.Module]:
    """Eval mode, no autograd graph, and the run's autocast; the model's mode is restored after.

    Args:
        model: the model to run.
        precision: "fp32" or "bf16" (as the run trained: `train.precision`).
    """
    was_training = model.training
    device = next(model.parameters()).device
    model.eval()
    try:
        with torch.no_grad(), autocast(device, precision):
            yield model
    finally:
        model.train(was_training)
