"""Hypotheses that begin with given tokens (CTranslate2's `target_prefix`): an `allowed_tokens`
hook (zoo.decode.state) that leaves a row one choice, its prefix's next token, until the prefix
is written; then the search goes on freely. The forced tokens are scored like any other, so a
hypothesis's score is that of the whole output, prefix included, as CTranslate2's.

Shape key: B sequences in a batch, N rows, t tokens generated so far, V vocabulary size, W the
longest prefix.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from zoo.decode.state import AllowedTokens


class ForcedPrefixes:
    """The prefix of every input (in the order decode_sorted numbers them; empty = free).

    Args:
        prefixes: token ids per input.
        vocab_size: V.
    """

    def __init__(self, prefixes: Sequence[Sequence[int]], vocab_size: int) -> None:
        width = max((len(p) for p in prefixes), default=0)
        self.table = torch.full((len(prefixes), max(width, 1)), -1, dtype=torch.long)  # -1: free
        for row, prefix in enumerate(prefixes):
            self.table[row, : len(prefix)] = torch.tensor(prefix, dtype=torch.long)
        self.vocab_size = vocab_size

    def hook(self, positions: Tensor) -> AllowedTokens:
        """The hook for one batch whose sequences are the inputs `positions` (B,)."""
        table = self.table.to(positions.device)[positions]

        def allowed(sequences: Tensor, generated: Tensor) -> Tensor | None:
            step = generated.shape[1]
            if step >= table.shape[1]:
                return None  # every prefix written: the search is free again, at no cost
            free = torch.ones(len(sequences), self.vocab_size, dtype=torch.bool, device=sequences.device)
            forced = table[sequences, step]
            rows = (forced >= 0).nonzero().squeeze(1)
            free[rows] = False
            free[rows, forced[rows]] = True
            return free

        return allowed
