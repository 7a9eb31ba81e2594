"""Each library's optimizer as its own training loop builds it, for the training benches: the
optimizer step is part of every training step, and the libraries take it differently.

- zoo: the runner's `build_optimizer` (torch's fused Adam/AdamW kernel).
- Hugging Face: the `Trainer`'s default, `TrainingArguments.optim`, read from the installed
  version ("adamw_torch_fused" for torch >= 2.8, plain "adamw_torch" before).
- timm: `timm.optim.create_optimizer_v2`, as its train.py calls it (torch's default AdamW: a
  loop over the tensors on CPU, foreach on CUDA).
"""

from __future__ import annotations

import torch
from torch import nn

from zoo.train.config import OptimConfig
from zoo.train.optim import build_optimizer


def zoo_optimizer(
    model: nn.Module,
    name: str,
    lr: float,
    *,
    weight_decay: float = 0.0,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> torch.optim.Optimizer:
    return build_optimizer(
        model, OptimConfig(name=name, lr=lr, weight_decay=weight_decay, betas=list(betas), eps=eps)
    )


def hf_trainer_optimizer(
    model: nn.Module, lr: float, *, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
) -> torch.optim.Optimizer:
    """The Trainer's default optimizer with its default weight decay (0)."""
    from transformers import TrainingArguments

    default = TrainingArguments.__dataclass_fields__["optim"].default
    if default not in ("adamw_torch", "adamw_torch_fused"):
        raise RuntimeError(f"unexpected Hugging Face default optimizer {default!r}")
    return torch.optim.AdamW(
        model.parameters(),
        lr=lr,
        betas=betas,
        eps=eps,
        weight_decay=0.0,
        fused=default == "adamw_torch_fused",
    )


def timm_optimizer(model: nn.Module, lr: float, *, weight_decay: float) -> torch.optim.Optimizer:
    from timm.optim import create_optimizer_v2

    return create_optimizer_v2(model, opt="adamw", lr=lr, weight_decay=weight_decay)
