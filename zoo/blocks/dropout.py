"""Dropout with a cheap mask on CPU.

On CPU, `bernoulli_` (behind nn.Dropout) asks the generator for one draw per element, and that
is slow: in profiles of the Multi30k training step (bench/results/training_profile_before.txt)
it took 8-12% of the step, about as much as attention. Here one 64-bit draw gives four 15-bit
uniforms, so the mask costs about a fifth as much; p is rounded to a multiple of 2**-15 (0.1
becomes 0.100006).
Elsewhere (CUDA) F.dropout's fused kernel is already cheap and is used as is, and so it is under
torch.compile, which cannot trace the in-place `random_` (each dropout was a graph break: 8 in
a 2-layer BERT) and generates its own fused mask. The masks come
from torch's default generator, so seeding and the runner's saved RNG state govern them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_BITS = 15
_LEVELS = 1 << _BITS


def cpu_keep_mask(shape: torch.Size, p: float) -> Tensor:
    """Boolean mask of `shape`, each element True with probability 1 - round(p * 2**15) / 2**15."""
    numel = shape.numel()
    # int64 random_() fills [0, 2**63): the top bit is always 0, so keep 15 bits of each 16.
    words = torch.empty((numel + 3) // 4, dtype=torch.int64).random_()
    lanes = words.view(torch.int16)[:numel].bitwise_and_(_LEVELS - 1)
    return lanes.ge(round(p * _LEVELS)).reshape(shape)


def cheap_mask_applies(x: Tensor, p: float) -> bool:
    """Whether `dropout` draws its own cheap mask for x (a CPU tensor outside torch.compile)."""
    return x.device.type == "cpu" and p < 1.0 and not torch.compiler.is_compiling()


def dropout(x: Tensor, p: float) -> Tensor:
    """Training-mode dropout of x with probability p: the cheap mask where it applies, else F.dropout."""
    if not cheap_mask_applies(x, p):
        return F.dropout(x, p, training=True)
    scale = _LEVELS / (_LEVELS - round(p * _LEVELS))
    # A float mask (not where(), twice as slow here): backward is one multiply by it.
    return x * cpu_keep_mask(x.shape, p).to(x.dtype).mul_(scale)


class Dropout(nn.Module):
    """nn.Dropout's behaviour (zero with probability p, scale the rest by 1 / (1 - p), identity
    in eval mode), with the cheap CPU mask of `cpu_keep_mask`."""

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        return dropout(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"
