"""Ancestral sampling with temperature, top-k and nucleus (top-p) filtering.

Shape key: B sequences, S source length, V vocabulary size.
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.data.special import SpecialIds
from zoo.decode.greedy import extend_one_by_one
from zoo.decode.protocol import EncoderDecoder, Hypotheses
from zoo.decode.state import AllowedTokens


def filter_logprobs(
    logprobs: Tensor, *, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0
) -> Tensor:
    """(B, V) log-probabilities -> logits of the distribution to sample from.

    Args:
        temperature: divides the log-probabilities (< 1 sharpens, > 1 flattens).
        top_k: keep only the k most probable ids (0 = all).
        top_p: keep the smallest set of most probable ids whose probability reaches p
            (Holtzman et al., 2020); 1.0 = all.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, not {temperature}")
    logits = logprobs / temperature
    if 0 < top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_probs, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
        drop_sorted = mass_before >= top_p  # the id that crosses p is kept
        drop = torch.empty_like(drop_sorted).scatter(1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def sample(
    model: EncoderDecoder,
    src: Tensor,
    *,
    special: SpecialIds,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    allowed_tokens: AllowedTokens | None = None,
    use_cache: bool = True,
) -> Hypotheses:
    """Draw one hypothesis per sequence.

    Args:
        temperature, top_k, top_p: see `filter_logprobs`.
        generator: the random stream (seed it for reproducible samples).
        the rest: as for zoo.decode.greedy.extend_one_by_one.

    Returns:
        Hypotheses with N = 1; scores are the model's (unfiltered) log-probabilities.
    """

    def pick(logprobs: Tensor) -> Tensor:
        logits = filter_logprobs(logprobs, temperature=temperature, top_k=top_k, top_p=top_p)
        return torch.multinomial(logits.softmax(dim=-1), 1, generator=generator).squeeze(1)

    return extend_one_by_one(
        model,
        src,
        pick,
        special=special,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        allowed_tokens=allowed_tokens,
        use_cache=use_cache,
    )
