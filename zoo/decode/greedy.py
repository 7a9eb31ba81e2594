"""Greedy search, and the one-hypothesis-per-sentence loop that sampling shares.

Shape key: B sentences, S source length, V vocabulary size.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from zoo.decode.protocol import EncoderDecoder, Hypotheses
from zoo.decode.state import DecodingState, force_eos, max_lengths


@torch.inference_mode()
def extend_one_by_one(model: EncoderDecoder, src: Tensor, pick: Callable[[Tensor], Tensor], *,
                      bos_idx: int, eos_idx: int, pad_idx: int, extra_len: int = 50,
                      use_cache: bool = True) -> Hypotheses:
    """Grow one hypothesis per sentence, choosing each token with `pick` until EOS.

    Args:
        model: the encoder-decoder (in eval mode).
        src: (B, S) right-padded source ids.
        pick: (B, V) log-probabilities -> (B,) chosen ids.
        bos_idx, eos_idx, pad_idx: the special ids (padding and BOS are never generated).
        extra_len: hypotheses stop at source length + extra_len tokens (then EOS is forced).
        use_cache: decode incrementally with the KV cache (False: re-run the whole prefix).

    Returns:
        Hypotheses with N = 1; scores are the summed model log-probabilities of the chosen ids.
    """
    state = DecodingState(model, src, bos_idx=bos_idx, never=[pad_idx, bos_idx], use_cache=use_cache)
    limits = max_lengths(src, pad_idx, extra_len)
    scores = torch.zeros(src.shape[0], device=src.device)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for step in range(int(limits.max()) + 1):
        logprobs = force_eos(state.next_logprobs(), limits == step, eos_idx)
        chosen = pick(logprobs).masked_fill(finished, pad_idx)
        chosen_logprob = logprobs.gather(1, chosen[:, None]).squeeze(1)
        scores += chosen_logprob.masked_fill(finished, 0.0)
        state.append(chosen)
        finished |= chosen == eos_idx
        if finished.all():
            break
    return Hypotheses(state.tokens[:, None, 1:], scores[:, None], eos_idx)


def greedy_search(model: EncoderDecoder, src: Tensor, *, bos_idx: int, eos_idx: int,
                  pad_idx: int, extra_len: int = 50, use_cache: bool = True) -> Hypotheses:
    """The most probable next token at every step. Arguments as for `extend_one_by_one`."""
    return extend_one_by_one(model, src, lambda logprobs: logprobs.argmax(dim=-1), bos_idx=bos_idx,
                             eos_idx=eos_idx, pad_idx=pad_idx, extra_len=extra_len,
                             use_cache=use_cache)
