"""Per-token sublayers on a padded batch's real tokens alone.

A padded batch (B, S, D) spends the feed-forward's work on padding too: 40% of it on SST-2-like
batches padded to their longest sentence. The feed-forward and its residual norm act on each
position alone, so they can run on the N real tokens packed as (N, D) and be put back; only
attention needs the (B, S) layout. This is the "remove padding" of FasterTransformer and
TurboTransformers, kept inside the stack so that no caller changes.

Padding positions then skip those sublayers: their outputs are not what an unpacked forward
gives (they are the attention sublayer's), but nothing reads them. Keys at padding are masked
out of every attention, and every head and loss reads real positions only.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


class RealTokens:
    """Where the real tokens of a (B, S, D) batch are, as flat indices into its B S positions.

    Args:
        real: bool (B, S), True at real tokens.
    """

    def __init__(self, real: Tensor) -> None:
        self.index = real.flatten().nonzero().squeeze(1)

    @classmethod
    def of_padding(cls, pad_mask: Tensor | None, x: Tensor) -> RealTokens | None:
        """The real tokens of `x` (B, S, D) under a key padding mask (B, 1, 1, S), True at real
        tokens; None when there is nothing to skip (no mask, a mask of another shape, no padding),
        or while torch.compile or torch.export traces (zoo.convert.onnx): whether a batch has padding,
        and how many real tokens it holds, are data, and one traced graph serves every batch."""
        if pad_mask is None or pad_mask.shape != (x.shape[0], 1, 1, x.shape[1]):
            return None
        if torch.compiler.is_compiling():
            return None
        real = pad_mask[:, 0, 0]
        return None if bool(real.all()) else cls(real)

    def apply(self, fn: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
        """`fn`, a per-position map (N, D) -> (N, D), on the real tokens of x (B, S, D); padding
        positions keep their values in x."""
        flat = x.flatten(0, 1)
        return flat.index_copy(0, self.index, fn(flat.index_select(0, self.index))).view_as(x)
