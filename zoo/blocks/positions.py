"""Positional encodings: (T, offset) -> (T, D), added to the token embeddings.

`offset` is the absolute position of the first row (the KV cache length while decoding).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def sinusoidal_table(max_len: int, dim: int) -> Tensor:
    """The paper's PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(...)."""
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    inv_freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * (-math.log(10000.0) / dim))
    table = torch.zeros(max_len, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq[: dim // 2])
    return table.float()


class SinusoidalPositions(nn.Module):
    """Fixed sinusoidal encodings (the paper, section 3.5); nothing to learn.

    `scale` multiplies the table (root mean square 0.71 at scale 1), for studies of how much
    positional signal the model is handed; the table holds the scaled values, so exports read
    the encodings the model adds.
    """

    def __init__(self, max_len: int, dim: int, *, scale: float = 1.0) -> None:
        super().__init__()
        self.register_buffer("table", sinusoidal_table(max_len, dim) * scale, persistent=False)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        if offset + length > self.table.shape[0]:
            raise ValueError(f"position {offset + length} exceeds max_len {self.table.shape[0]}")
        return self.table[offset : offset + length]


class LearnedPositions(nn.Module):
    """A learned embedding per position (BERT, the paper's table 3 row E)."""

    def __init__(self, max_len: int, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(max_len, dim) * 0.02)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        if offset + length > self.weight.shape[0]:
            raise ValueError(f"position {offset + length} exceeds max_len {self.weight.shape[0]}")
        return self.weight[offset : offset + length]


POSITIONS: dict[str, type[nn.Module]] = {"sinusoidal": SinusoidalPositions, "learned": LearnedPositions}


def build_positions(kind: str, max_len: int, dim: int, *, scale: float = 1.0) -> nn.Module:
    """The POSITIONS entry `kind` for `max_len` positions of width `dim`; `scale` multiplies the
    sinusoids (a learned table sets its own size, so it takes none)."""
    if kind not in POSITIONS:
        raise ValueError(f"unknown positions {kind!r}; choose from {sorted(POSITIONS)}")
    if kind == "sinusoidal":
        return SinusoidalPositions(max_len, dim, scale=scale)
    if scale != 1.0:
        raise ValueError(f"a position scale applies to sinusoidal positions, not {kind!r}")
    return POSITIONS[kind](max_len, dim)


def resample_grid(table: Tensor, new_grid: tuple[int, int]) -> Tensor:
    """Bicubically resample an (N, D) position table laid out on a square grid to `new_grid`.

    Used when a ViT runs at another image size (as timm does); prefix tokens are handled by the
    caller.
    """
    n, dim = table.shape
    side = math.isqrt(n)
    if side * side != n:
        raise ValueError(f"{n} positions do not form a square grid")
    if (side, side) == tuple(new_grid):
        return table
    grid = table.reshape(1, side, side, dim).permute(0, 3, 1, 2)  # (1, D, side, side)
    grid = F.interpolate(grid.float(), size=new_grid, mode="bicubic", antialias=True, align_corners=False)
    return grid.permute(0, 2, 3, 1).reshape(-1, dim).to(table.dtype)
