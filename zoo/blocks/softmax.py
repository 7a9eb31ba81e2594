"""Softmax over the last dimension, fast for the short rows of attention over short sentences.

torch's CPU softmax runs its vectorized kernel only on whole vectors of the row (16 float32
lanes with AVX-512); a row shorter than one vector takes its slow tail path for every element.
Over 14 keys (a Multi30k sentence) forward and backward took 24.5 ns an element against 2.0 over
16 keys (Zen 4, one thread, torch 2.14). Rows shorter than `VECTOR` are padded to it with -inf,
which adds zeros to the sum and leaves every probability unchanged: 3.7 ns an element over 14
keys (`python -m bench.short_attention`, bench/results/attention_short_keys_cpu.md). Rows of one
or two are left alone (padding them to 16 costs more than the slow path), and so is bfloat16,
whose softmax was as slow padded as not (scratch runs).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

VECTOR = 16
"""Rows shorter than this are padded: float32 lanes of one AVX-512 vector (two of AVX2's)."""
SHORTEST_PADDED = 3
"""Padded from this width on: forward and backward over 3 keys took 15.2 ns an element padded,
28.5 not (the bench above); over 2 keys 73 padded, 31 not (a scratch run)."""


def softmax_last(x: Tensor) -> Tensor:
    """x.softmax(dim=-1), the same values and gradients; short float32 CPU rows padded."""
    width = x.shape[-1]
    if (  # compiled code first: a symbolic width is not compared (no guard on it)
        torch.compiler.is_compiling()
        or x.device.type != "cpu"
        or x.dtype != torch.float32
        or not SHORTEST_PADDED <= width < VECTOR
    ):
        return x.softmax(dim=-1)
    return F.pad(x, (0, VECTOR - width), value=float("-inf")).softmax(dim=-1)[..., :width]
