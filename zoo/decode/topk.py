"""Row-wise top-k over a vocabulary, pruned by block maxima.

torch.topk on CPU selects per row at about 5 ns an element: for beam search's (rows, V) scores
with k = 2 x beam it cost 10% of a Multi30k beam search. The k largest entries of a row lie in
the k blocks with the largest maxima (an entry outside them is beaten by those k maxima), so one
vectorised max per block of 32 entries, then a top-k over the V / 32 maxima and over the k x 32
entries of the chosen blocks, give the same values, 3-4x faster for V = 8,000 and k = 8.
"""

from __future__ import annotations

import torch
from torch import Tensor

BLOCK = 32


def top_k(scores: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The k largest entries of each row of `scores` (N, V) and their columns, largest first,
    as `scores.topk(k, dim=1)` (which of several equal entries is returned may differ)."""
    n, v = scores.shape
    blocks = v // BLOCK
    if blocks < 4 * k or scores.device.type != "cpu":  # pruning would not pay (measured on CPU only)
        return scores.topk(k, dim=1)
    full = blocks * BLOCK
    grid = scores[:, :full].view(n, blocks, BLOCK)  # a view: only the column dimension is split
    _, chosen = grid.amax(dim=2).topk(k, dim=1)  # (N, k) the blocks that hold the k largest
    candidates = grid.gather(1, chosen[:, :, None].expand(-1, -1, BLOCK)).view(n, k * BLOCK)
    columns = (chosen[:, :, None] * BLOCK + torch.arange(BLOCK, device=scores.device)).view(n, -1)
    if full < v:  # the last, partial block is always a candidate
        candidates = torch.cat([candidates, scores[:, full:]], dim=1)
        columns = torch.cat([columns, torch.arange(full, v, device=scores.device).expand(n, -1)], dim=1)
    values, where = candidates.topk(k, dim=1)
    return values, columns.gather(1, where)
