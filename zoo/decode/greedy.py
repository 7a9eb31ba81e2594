"""Greedy search, and the one-hypothesis-per-sequence loop that sampling shares.

Shape key: B sequences, S source length, V vocabulary size.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from zoo.data.special import SpecialIds
from zoo.decode.protocol import EncoderDecoder, Hypotheses
from zoo.decode.state import AllowedTokens, DecodingState


@torch.inference_mode()
def extend_one_by_one(
    model: EncoderDecoder,
    src: Tensor,
    pick: Callable[[Tensor], Tensor],
    *,
    special: SpecialIds,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    allowed_tokens: AllowedTokens | None = None,
    use_cache: bool = True,
) -> Hypotheses:
    """Grow one hypothesis per sequence, choosing each token with `pick` until EOS.

    Args:
        model: the encoder-decoder (in eval mode).
        src: (B, S) right-padded source ids.
        pick: (B, V) log-probabilities -> (B,) chosen ids.
        special: the special ids (padding and BOS are never generated).
        max_len_a, max_len_b: hypotheses stop at a * source length + b tokens (then EOS is
            forced), and before the model's position table ends.
        allowed_tokens: restricts each next token given the prefix (zoo.decode.state.AllowedTokens).
        use_cache: decode incrementally with the KV cache (False: re-run the whole prefix).

    Returns:
        Hypotheses with N = 1; scores are the summed model log-probabilities of the chosen ids.
    """
    state = DecodingState(
        model,
        src,
        special=special,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        allowed_tokens=allowed_tokens,
        use_cache=use_cache,
    )
    b, steps = src.shape[0], int(state.limits.max()) + 1
    active = torch.arange(b, device=src.device)  # the sequence of each row still growing
    scores = torch.zeros(b, device=src.device)
    tokens = src.new_full((b, steps), special.pad)  # each row's ids, written when it ends
    for step in range(steps):
        logprobs = state.next_logprobs(active)
        chosen = pick(logprobs)
        scores[active] += logprobs.gather(1, chosen[:, None]).squeeze(1)
        state.append(chosen)
        ended = chosen == special.eos  # every row ends by its limit, where only EOS is allowed
        if ended.any():
            tokens[active[ended], : step + 1] = state.tokens[ended, 1:]
            if ended.all():
                break
            keep = (~ended).nonzero().squeeze(1)  # finished rows leave the batch
            active = active[keep]
            state.select(keep, sources=keep)
    return Hypotheses(tokens[:, None, : step + 1], scores[:, None], special.eos)


def greedy_search(
    model: EncoderDecoder,
    src: Tensor,
    *,
    special: SpecialIds,
    max_len_a: float = 1.0,
    max_len_b: int = 50,
    allowed_tokens: AllowedTokens | None = None,
    use_cache: bool = True,
) -> Hypotheses:
    """The most probable next token at every step. Arguments as for `extend_one_by_one`."""
    return extend_one_by_one(
        model,
        src,
        lambda logprobs: logprobs.argmax(dim=-1),
        special=special,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        allowed_tokens=allowed_tokens,
        use_cache=use_cache,
    )
