"""Losses shared by the tasks."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor


def label_smoothed_cross_entropy(logits: Tensor, target: Tensor, *, smoothing: float = 0.0,
                                 ignore_index: int = -100) -> tuple[Tensor, Tensor, Tensor]:
    """Cross-entropy against (1 - eps) * one_hot + eps / V (the paper's eps_ls = 0.1).

    Args:
        logits: (..., V) unnormalised scores. target: (...) class ids.
        smoothing: eps_ls. ignore_index: target id that contributes nothing (padding).
    Returns:
        (loss_sum, nll_sum, units): the smoothed loss and the plain negative log-likelihood,
        both summed over non-ignored targets, and their count. Sums, so the runner can
        normalise by the tokens of a whole accumulated step.
    """
    logits = logits.reshape(-1, logits.shape[-1]).float()
    target = target.reshape(-1)
    loss = F.cross_entropy(logits, target, ignore_index=ignore_index, label_smoothing=smoothing,
                           reduction="sum")
    nll = F.cross_entropy(logits, target, ignore_index=ignore_index, reduction="sum").detach()
    units = (target != ignore_index).sum()
    return loss, nll, units
