"""Rows of a decoder-only language model's generation: left-padded prompts, the ids generated
after them, and the KV cache behind them.

The prompts are left-padded into one batch, so every row's next id is read at the last column:
the padding is hidden by a key mask and each row's positions count from its first real id
(Hugging Face's `position_ids = attention_mask.cumsum(-1) - 1`). The first forward (prefill)
runs the whole prompts; with a cache, each later one runs only the newest id. Rows that finish
leave the batch (`select`, which reorders the cache too), and beam search reorders and repeats
rows the same way. Once a single row steps through the cache, the model's products are readied
for one row until the state closes (zoo.blocks.linear.single_row_weights: matrix-vector
products, faster over column-major weights or split into one batched call); use the state as a
context manager.

Shape key: N rows, P padded prompt length, t ids generated, V vocabulary size, D model dim.
"""

from __future__ import annotations

import contextlib
from typing import Protocol

import torch
from torch import Tensor

from zoo.blocks import CausalCache
from zoo.blocks.linear import single_row_weights


class CausalLM(Protocol):
    """What generation needs from a decoder-only model (zoo.models.gpt.GPT)."""

    max_len: int  # positions: a row's prompt plus its new ids fit in them
    vocab_size: int
    output_weight: Tensor  # (V, D): the output projection (its device is the model's)

    def hidden(
        self,
        ids: Tensor,
        *,
        cache: CausalCache | None = None,
        positions: Tensor | None = None,
        key_mask: Tensor | None = None,
    ) -> Tensor:
        """ids (N, T) -> the last hidden states (N, T, D)."""

    def logits(self, hidden: Tensor) -> Tensor:
        """hidden (..., D) -> next-token logits (..., V)."""

    def new_cache(self) -> CausalCache:
        """An empty KV cache."""


class LMState:
    """Each row's ids so far (prompt, then generated) and the model state behind them.

    Args:
        model: the language model (in eval mode).
        prompts: each row's prompt ids (at least one id each).
        pad_id: the id written in the left padding (never read: the key mask hides it).
        use_cache: decode incrementally with the KV cache (False: re-run every row's whole
            sequence at each step, the slow reference the cache is tested against).
    """

    keeps_rows = False  # ended rows leave the batch (`select`)
    steps_per_call = 1  # steps a forward call runs (StaticLMState may run several)

    def __init__(
        self, model: CausalLM, prompts: list[list[int]], *, pad_id: int, use_cache: bool = True
    ) -> None:
        device = model.output_weight.device
        lengths = torch.tensor([len(p) for p in prompts], device=device)
        width = int(lengths.max())
        self.model, self.prompt_width = model, width
        self.tokens = torch.full((len(prompts), width), pad_id, dtype=torch.long, device=device)
        for row, prompt in enumerate(prompts):
            self.tokens[row, width - len(prompt) :] = torch.tensor(prompt, device=device)
        self.real = torch.arange(width, device=device) >= width - lengths[:, None]  # (N, P + t)
        self.lengths = lengths  # real ids per row: the next id's position is lengths - 1 once appended
        # Without padding the model's own offsets are the positions, and no key mask is needed
        # (attention keeps its causal fast path).
        self.padded = bool((lengths != width).any())
        self.cache = model.new_cache() if use_cache else None
        self._layout: contextlib.ExitStack | None = None  # single_row_weights, once entered

    def __enter__(self) -> LMState:
        return self

    def __exit__(self, *exc) -> None:
        if self._layout is not None:
            self._layout.close()

    def one_row_layout(self) -> None:
        """Before a step through the cache: with one row left, the products are readied for it."""
        if self._layout is None and self.tokens.shape[0] == 1:
            self._layout = contextlib.ExitStack()
            self._layout.enter_context(single_row_weights(self.model))

    @property
    def generated(self) -> Tensor:
        """(N, t) each row's new ids."""
        return self.tokens[:, self.prompt_width :]

    def next_logits(self) -> Tensor:
        """(N, V) float32 logits of every row's next id."""
        incremental = self.cache is not None and self.cache.offset > 0
        if incremental:
            self.one_row_layout()
        ids = self.tokens[:, -1:] if incremental else self.tokens
        positions = key_mask = None
        if self.padded:
            key_mask = self.real
            positions = (self.lengths - 1)[:, None] if incremental else (self.real.cumsum(1) - 1).clamp(min=0)
        hidden = self.model.hidden(ids, cache=self.cache, positions=positions, key_mask=key_mask)
        return self.model.logits(hidden[:, -1]).float()  # only the last position's logits

    def append(self, tokens: Tensor) -> None:
        """Extend every row by k ids, tokens (N, k)."""
        self.tokens = torch.cat([self.tokens, tokens], dim=1)
        self.real = torch.cat([self.real, self.real.new_ones(tokens.shape)], dim=1)
        self.lengths = self.lengths + tokens.shape[1]

    def select(self, rows: Tensor) -> None:
        """Keep the rows `rows` (N',), in that order, repeats allowed: rows leaving the batch, beams
        expanded and reordered."""
        self.tokens, self.real = self.tokens.index_select(0, rows), self.real.index_select(0, rows)
        self.lengths = self.lengths.index_select(0, rows)
        if self.cache is not None:
            self.cache.reorder(rows)
