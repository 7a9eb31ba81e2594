"""A batch of partial hypotheses and the decoder state behind them, extended one token at a time.

The source is encoded once per sentence. With a cache, each step feeds only the newest token and
the cross-attention keys/values are computed on the first step, then reused; without one, each
step re-runs the decoder over the whole prefix (the slow reference the cache is tested against).
Beam search and pruning of finished sentences reorder the rows with `select`.

Shape key: N rows (sentences or sentence x beam), t tokens so far, V vocabulary size.
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.decode.protocol import EncoderDecoder


def max_lengths(src: Tensor, pad_idx: int, extra_len: int) -> Tensor:
    """(B,) the most tokens each hypothesis may have before EOS: its source length + extra_len
    (the paper: "maximum output length to input length + 50")."""
    return (src != pad_idx).sum(dim=1) + extra_len


def force_eos(logprobs: Tensor, rows: Tensor, eos_idx: int) -> Tensor:
    """Leave only EOS possible in the rows where `rows` (N,) is True (they reached their limit)."""
    if not rows.any():
        return logprobs
    only_eos = torch.full_like(logprobs[0], float("-inf"))
    only_eos[eos_idx] = 0.0
    return torch.where(rows[:, None], logprobs + only_eos, logprobs)


class DecodingState:
    """Decoder inputs so far (BOS + generated ids) with the encoder output and cache they need.

    Args:
        model: the encoder-decoder to run.
        src: (B, S) source ids; encoded here, once.
        bos_idx: the first decoder input.
        never: ids the model may never generate (padding, BOS).
        use_cache: decode incrementally with the model's KV cache.
    """

    def __init__(self, model: EncoderDecoder, src: Tensor, *, bos_idx: int, never: list[int],
                 use_cache: bool = True) -> None:
        self.model = model
        self.memory, self.memory_mask = model.encode(src)
        self.cache = model.new_cache() if use_cache else None
        self.tokens = src.new_full((src.shape[0], 1), bos_idx)
        self.never = never

    def next_logprobs(self) -> Tensor:
        """(N, V) float32 log-probabilities of each row's next token."""
        new = self.tokens if self.cache is None else self.tokens[:, -1:]
        logits = self.model.decode(new, self.memory, self.memory_mask, self.cache)[:, -1]
        if self.cache is not None:
            self.memory = None  # the cross-attention caches hold its keys and values now
        logprobs = logits.float().log_softmax(dim=-1)
        logprobs[:, self.never] = float("-inf")
        return logprobs

    def append(self, tokens: Tensor) -> None:
        """Extend every row by one token (N,)."""
        self.tokens = torch.cat([self.tokens, tokens[:, None]], dim=1)

    def select(self, rows: Tensor) -> None:
        """Keep the rows `rows` (repeats allowed): beam expansion, reordering and pruning."""
        self.tokens = self.tokens.index_select(0, rows)
        self.memory_mask = self.memory_mask.index_select(0, rows)
        if self.memory is not None:
            self.memory = self.memory.index_select(0, rows)
        if self.cache is not None:
            self.cache.reorder(rows)
