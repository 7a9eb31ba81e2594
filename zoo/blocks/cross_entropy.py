"""Label-smoothed cross-entropy over logits, the loss the tasks share."""

from __future__ import annotations

import torch
from torch import Tensor


def label_smoothed_cross_entropy(
    logits: Tensor, target: Tensor, *, smoothing: float = 0.0, ignore_index: int = -100
) -> tuple[Tensor, Tensor, Tensor]:
    """Cross-entropy against (1 - eps) * one_hot + eps / V (the paper's eps_ls = 0.1).

    Args:
        logits: (..., V) unnormalised scores. target: (...) class ids.
        smoothing: eps_ls. ignore_index: target id that contributes nothing (padding).
    Returns:
        (loss_sum, nll_sum, units): the smoothed loss and the plain negative log-likelihood,
        both summed over non-ignored targets, and their count. Sums, so the runner can
        normalise by the tokens of a whole accumulated step.
    """
    logits = logits.reshape(-1, logits.shape[-1])
    target = target.reshape(-1)
    keep = target != ignore_index
    # One log-softmax for both sums (two F.cross_entropy calls computed it twice over (N, V)),
    # in fp32 at least whatever the autocast dtype of the logits.
    lprobs = logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(-1)
    nll = -lprobs.gather(-1, target.masked_fill(~keep, 0)[:, None])[:, 0]
    loss = nll if smoothing == 0.0 else (1.0 - smoothing) * nll - smoothing * lprobs.mean(-1)
    # Masked, not indexed: a boolean index has a data-dependent shape, a graph break under
    # torch.compile.
    return torch.where(keep, loss, 0.0).sum(), torch.where(keep, nll, 0.0).sum().detach(), keep.sum()
