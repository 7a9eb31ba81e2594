"""The loss of knowledge distillation (Hinton et al., 2015) for the classify head: a teacher's
logits blended with the gold labels as config.DistillConfig weighs them. The teacher's logits
come from tasks.bert.finetune.task.teacher_logits."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from tasks.bert.finetune.config import DistillConfig
from tasks.bert.finetune.data import IGNORE


def distilled_loss(
    logits: Tensor, teacher: Tensor, gold: Tensor, distill: DistillConfig
) -> tuple[Tensor, Tensor]:
    """(loss, KL), each summed over the batch: (1 - alpha) CE(gold) + alpha T^2 KL(teacher || model)
    at temperature T (the T^2 keeps the soft term's gradients at the hard term's scale)."""
    t = distill.temperature
    model, taught = F.log_softmax(logits / t, dim=-1), F.log_softmax(teacher / t, dim=-1)
    kl = F.kl_div(model, taught, log_target=True, reduction="sum")
    hard = F.cross_entropy(logits, gold, ignore_index=IGNORE, reduction="sum")
    return (1 - distill.alpha) * hard + distill.alpha * t * t * kl, kl
