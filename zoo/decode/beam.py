"""Beam search, batched over sentences and beams, with the KV cache.

The paper's settings: beam 4, length penalty alpha = 0.6, output length at most source length
+ 50. Rules, in order, at every step for every sentence still searching:

1. Each of the k live beams proposes every next token; the 2k best (beam, token) pairs by summed
   log-probability are ranked.
2. A pair ending in EOS among the first k is a finished hypothesis, scored by the GNMT length
   penalty (Wu et al., 2016): log p(Y) / lp(Y), lp(Y) = ((5 + |Y|) / 6) ** alpha, |Y| counting
   the EOS. Each sentence keeps its `n_best` best finished hypotheses.
3. The first k pairs that do not end in EOS are the next live beams (there are at least k: a
   beam has one EOS).
4. Early stopping: a sentence stops when its n_best-th finished hypothesis scores at least the
   best that any live beam could still reach, which is the best live log-probability divided by
   lp(longest allowed length): log-probabilities only fall as tokens are added and lp only
   grows (alpha >= 0). So stopping never changes the result. A sentence also stops at its length
   limit, where only EOS is allowed.

With alpha = 0 and beam 1 this is exactly greedy search. The source is encoded once per sentence
and the first step runs on the B sentences; only then are the caches (whose cross-attention
keys/values are now filled) copied into B x beam rows. Sentences that stop leave the batch.

Shape key: B sentences, k beams, n live sentences, V vocabulary size, L hypothesis length.
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.decode.protocol import EncoderDecoder, Hypotheses
from zoo.decode.state import DecodingState, force_eos, max_lengths


def length_penalty(length: Tensor | int, alpha: float) -> Tensor | float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6) ** alpha."""
    return ((5.0 + length) / 6.0) ** alpha


class FinishedHypotheses:
    """The n best finished hypotheses of every sentence: scores (B, n), tokens (B, n, L)."""

    def __init__(self, num_sentences: int, n_best: int, max_len: int, pad_idx: int,
                 device: torch.device) -> None:
        self.scores = torch.full((num_sentences, n_best), float("-inf"), device=device)
        self.tokens = torch.full((num_sentences, n_best, max_len), pad_idx, device=device,
                                 dtype=torch.long)
        self.pad_idx = pad_idx

    def add(self, sentences: Tensor, scores: Tensor, prefixes: Tensor, eos_idx: int) -> None:
        """Offer candidates: scores (n, c) (-inf = none), prefixes (n, c, t) ending before EOS."""
        n, c, t = prefixes.shape
        candidates = prefixes.new_full((n, c, self.tokens.shape[2]), self.pad_idx)
        candidates[:, :, :t] = prefixes
        candidates[:, :, t] = eos_idx
        merged = torch.cat([self.scores[sentences], scores], dim=1)
        best, which = merged.topk(self.scores.shape[1], dim=1)
        tokens = torch.cat([self.tokens[sentences], candidates], dim=1)
        self.scores[sentences] = best
        self.tokens[sentences] = tokens.gather(1, which[..., None].expand(-1, -1, tokens.shape[2]))

    def worst(self, sentences: Tensor) -> Tensor:
        """(n,) the n_best-th score of each sentence (-inf while it has fewer)."""
        return self.scores[sentences, -1]

    def hypotheses(self, eos_idx: int) -> Hypotheses:
        length = int((self.tokens != self.pad_idx).sum(dim=-1).max())
        return Hypotheses(self.tokens[..., :length], self.scores, eos_idx)


@torch.inference_mode()
def beam_search(model: EncoderDecoder, src: Tensor, *, bos_idx: int, eos_idx: int, pad_idx: int,
                beam_size: int = 4, alpha: float = 0.6, extra_len: int = 50, n_best: int = 1,
                use_cache: bool = True) -> Hypotheses:
    """Translate a batch with beam search (rules in the module docstring).

    Args:
        model: the encoder-decoder (in eval mode).
        src: (B, S) right-padded source ids.
        bos_idx, eos_idx, pad_idx: the special ids (padding and BOS are never generated).
        beam_size: live hypotheses per sentence (k).
        alpha: length-penalty exponent (0 = plain log-probability).
        extra_len: hypotheses stop at source length + extra_len tokens (then EOS is forced).
        n_best: finished hypotheses returned per sentence (at most beam_size).
        use_cache: decode incrementally with the KV cache (False: re-run the whole prefix).

    Returns:
        Hypotheses with N = n_best, best first; scores are length-normalised log-probabilities.
    """
    if not 1 <= n_best <= beam_size:
        raise ValueError(f"n_best must be between 1 and beam_size {beam_size}, not {n_best}")
    b, k, device = src.shape[0], beam_size, src.device
    state = DecodingState(model, src, bos_idx=bos_idx, never=[pad_idx, bos_idx], use_cache=use_cache)
    limits = max_lengths(src, pad_idx, extra_len)
    finished = FinishedHypotheses(b, n_best, int(limits.max()) + 1, pad_idx, device)

    logprobs = state.next_logprobs()  # first step on the B sentences, then copy into beams
    rows = torch.arange(b, device=device).repeat_interleave(k)
    state.select(rows)
    logprobs = logprobs.index_select(0, rows)
    scores = torch.full((b, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # the copies are identical: only one may propose at the first step
    active = torch.arange(b, device=device)  # the sentence of each group of k rows

    for step in range(int(limits.max()) + 1):
        n, vocab = active.numel(), logprobs.shape[-1]
        logprobs = force_eos(logprobs, (limits[active] == step).repeat_interleave(k), eos_idx)
        top, index = (scores.view(-1, 1) + logprobs).view(n, k * vocab).topk(2 * k, dim=1)
        parent = index // vocab + torch.arange(n, device=device)[:, None] * k  # row in state
        token = index % vocab
        ends = token == eos_idx

        ended = ends[:, :k] & top[:, :k].isfinite()
        if ended.any():
            normalised = (top[:, :k] / length_penalty(step + 1, alpha)).masked_fill(~ended, float("-inf"))
            prefixes = state.tokens[:, 1:][parent[:, :k]]  # (n, k, step)
            finished.add(active, normalised, prefixes, eos_idx)

        live = ends.to(torch.uint8).argsort(dim=1, stable=True)[:, :k]  # non-EOS first, in rank order
        scores, parent, token = top.gather(1, live), parent.gather(1, live), token.gather(1, live)

        reachable = scores.max(dim=1).values / length_penalty(limits[active] + 1, alpha)
        done = (finished.worst(active) >= reachable) | (limits[active] <= step)
        if done.all():
            break
        if done.any():
            keep = (~done).nonzero().squeeze(1)
            active, scores, parent, token = active[keep], scores[keep], parent[keep], token[keep]
        state.select(parent.reshape(-1))
        state.append(token.reshape(-1))
        logprobs = state.next_logprobs()
    return finished.hypotheses(eos_idx)
