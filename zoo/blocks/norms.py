"""Normalisation layers by name: the axis that configs and `bench/` pick from."""

from __future__ import annotations

from torch import nn

NORMS: dict[str, type[nn.Module]] = {"layer": nn.LayerNorm, "rms": nn.RMSNorm}


def build_norm(kind: str, dim: int, *, eps: float = 1e-5) -> nn.Module:
    """LayerNorm (the paper) or RMSNorm over the last dimension."""
    if kind not in NORMS:
        raise ValueError(f"unknown norm {kind!r}; choose from {sorted(NORMS)}")
    return NORMS[kind](dim, eps=eps)
