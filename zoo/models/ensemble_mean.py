"""An ensemble's prediction as fairseq's checkpoint ensembles make it: the log of the members'
mean probability (a mixture of their distributions), not the mean of their log-probabilities."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor


def log_mean_probability(logits: Sequence[Tensor]) -> Tensor:
    """log(mean over the members of softmax(x)), softmax over the last axis, in float32: the
    members' logits, each (..., V) -> (..., V)."""
    log_probs = torch.stack([x.float().log_softmax(dim=-1) for x in logits])
    return torch.logsumexp(log_probs, dim=0) - math.log(len(logits))
