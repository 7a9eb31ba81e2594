"""A batch of partial hypotheses and the decoder state behind them, extended one token at a time.

The source is encoded once per sequence. With a cache, each step feeds only the newest token and
the cross-attention keys/values are computed on the first step, then reused; without one, each
step re-runs the decoder over the whole prefix (the slow reference the cache is tested against).
Beam search and pruning of finished sequences reorder the rows with `select`.

Every step's next-token distribution goes through the same three rules, in `next_logprobs`:
padding and BOS are never generated; an `allowed_tokens` hook may restrict the choice given the
prefix; at its length limit a row may only end (EOS), whatever the hook says.

Shape key: B sequences, N rows (sequences or sequence x beam), t tokens so far, V vocabulary size.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from zoo.data.special import SpecialIds
from zoo.decode.protocol import EncoderDecoder

AllowedTokens = Callable[[Tensor, Tensor], Tensor | None]
"""allowed_tokens(sequences (N,), prefixes (N, t)) -> (N, V) bool, True = may come next; None =
every token (no (N, V) mask to build and apply at that step).

`sequences` is each row's index into the source batch given to the search, `prefixes` its
generated ids so far (BOS excluded). Batched: one call per step for all rows (Hugging Face's
prefix_allowed_tokens_fn takes one row at a time)."""


def max_lengths(src: Tensor, pad_idx: int, a: float, b: int, cap: int) -> Tensor:
    """(B,) the most tokens each hypothesis may have before EOS: a * |src| + b (fairseq's
    max_len_a, max_len_b; the paper's "input length + 50" is a=1, b=50), at most `cap`."""
    lengths = (src != pad_idx).sum(dim=1)
    return (a * lengths + b).floor().long().clamp(max=cap)


def force_eos(logprobs: Tensor, rows: Tensor, eos_idx: int) -> None:
    """In place: leave only EOS possible in the rows where `rows` (N,) is True (they reached
    their limit)."""
    if rows.any():
        only_eos = torch.full_like(logprobs[0], float("-inf"))
        only_eos[eos_idx] = 0.0
        logprobs[rows] += only_eos


class DecodingState:
    """Decoder inputs so far (BOS + generated ids) with the encoder output and cache they need.

    Rows and sources: the state starts with one row (hypothesis) per source sequence; `select`
    may then give every source several consecutive rows (beam search's beams) and drop sources
    that stopped. The encoder output, its mask and the cross-attention caches stay per source
    (shared by its rows, never copied per step); the tokens and self-attention caches are per row.

    Args:
        model: the encoder-decoder to run.
        src: (B, S) right-padded source ids; encoded here, once.
        special: the special ids (padding and BOS are never generated).
        max_len_a, max_len_b: each hypothesis has at most a * |src| + b tokens before EOS, and
            never more than the model's position table allows.
        allowed_tokens: restricts the next token given the prefix (see `AllowedTokens`).
        use_cache: decode incrementally with the model's KV cache.
        beams: rows per source after the first step (beam search's k), for the cache.
    """

    def __init__(
        self,
        model: EncoderDecoder,
        src: Tensor,
        *,
        special: SpecialIds,
        max_len_a: float,
        max_len_b: int,
        allowed_tokens: AllowedTokens | None = None,
        use_cache: bool = True,
        beams: int = 1,
    ) -> None:
        self.model, self.special, self.allowed_tokens = model, special, allowed_tokens
        # The decoder input at the limit is BOS + limit tokens: positions 0..limit.
        self.limits = max_lengths(src, special.pad, max_len_a, max_len_b, cap=model.max_len - 1)
        self.memory, self.memory_mask = model.encode(src)
        self.cache = model.new_cache(beams) if use_cache else None
        self.tokens = src.new_full((src.shape[0], 1), special.bos)
        self.never = [special.pad, special.bos]

    def next_logprobs(self, sequences: Tensor, *, idle: Tensor | None = None) -> Tensor:
        """(N, V) float32 log-probabilities of each row's next token under the rules above.

        Args:
            sequences: (N,) the source sequence of each row.
            idle: (N,) rows whose next token does not matter (beams scored -inf): the hook's
                answer for them is not checked.
        """
        new = self.tokens if self.cache is None else self.tokens[:, -1:]
        logits = self.model.decode(new, self.memory, self.memory_mask, self.cache)[:, -1]
        if self.cache is not None:
            self.memory = None  # the cross-attention caches hold its keys and values now
        # The logits become the log-probabilities in place (one (N, V) tensor per step, which the
        # rules below edit in place too): out of place, log-softmax took 9% of a Multi30k beam
        # search's profile, in place 4%.
        logprobs = logits.float()
        torch.log_softmax(logprobs, dim=-1, out=logprobs)
        logprobs[:, self.never] = float("-inf")
        at_limit = self.limits[sequences] == self.tokens.shape[1] - 1
        restricted = (
            None if self.allowed_tokens is None else self.allowed_tokens(sequences, self.tokens[:, 1:])
        )
        if restricted is not None:
            free = at_limit if idle is None else at_limit | idle
            logprobs.masked_fill_(~(restricted | free[:, None]), float("-inf"))
            if not logprobs.isfinite().any(dim=-1).all():
                raise ValueError("allowed_tokens left a row with no token it may generate")
        force_eos(logprobs, at_limit, self.special.eos)
        return logprobs

    def append(self, tokens: Tensor) -> None:
        """Extend every row by one token (N,)."""
        self.tokens = torch.cat([self.tokens, tokens[:, None]], dim=1)

    def select(self, rows: Tensor, sources: Tensor | None = None) -> None:
        """Keep the rows `rows` (repeats allowed), each staying with its source sequence: beam
        expansion and reordering.

        Args:
            rows: (N',) the rows kept, the rows of each source consecutive and equally many.
            sources: when sequences stop, the sources kept (indices into the current ones, in
                order); None = the same sources.
        """
        self.tokens = self.tokens.index_select(0, rows)
        if self.cache is not None:
            self.cache.reorder(rows)
        if sources is None:
            return
        self.memory_mask = self.memory_mask.index_select(0, sources)
        if self.memory is not None:
            self.memory = self.memory.index_select(0, sources)
        if self.cache is not None:
            self.cache.select_sources(sources)
