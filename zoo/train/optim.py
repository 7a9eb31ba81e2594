"""Optimizers with the usual weight-decay exclusions."""

from __future__ import annotations

import torch
from torch import nn

from zoo.config import ConfigError
from zoo.train.config import OptimConfig


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Decay matrices only: never norms, biases (1-D) or what `model.no_weight_decay()` names
    (timm's convention: position embeddings, class tokens)."""
    skip = set(model.no_weight_decay()) if hasattr(model, "no_weight_decay") else set()
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim < 2 or name in skip else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, cfg: OptimConfig) -> torch.optim.Optimizer:
    groups = param_groups(model, cfg.weight_decay)
    if cfg.name in ("adam", "adamw"):
        if len(cfg.betas) != 2:
            raise ConfigError(f"key 'optim.betas': needs two values, got {cfg.betas}")
        cls = torch.optim.AdamW if cfg.name == "adamw" else torch.optim.Adam
        return cls(groups, lr=cfg.lr, betas=tuple(cfg.betas), eps=cfg.eps)
    if cfg.name == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum)
    raise ConfigError(f"key 'optim.name': unknown optimizer {cfg.name!r}; choose adam, adamw or sgd")
