"""Hugging Face's logits processors and sampling warpers for decoder-only generation, each as its
transformers class computes it, applied in its order (`GenerationMixin._get_logits_processor`):
repetition penalty, no-repeat n-gram, min_new_tokens; then, when sampling, temperature, top-k,
top-p.

Sequences are left-padded rows (prompt then generated ids) with a `real` mask, False at the
padding: the penalties read each row's real ids only. Hugging Face's repetition penalty ignores
the padding too; its n-gram ban reads the padding ids as tokens, which changes the result only
when a row's real ids contain the padding id (here they never count).

Shape key: N rows, T ids so far (padding included), V vocabulary size.
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.decode.lm_config import GenerationConfig
from zoo.decode.sampling import filter_logprobs


def penalize_repetitions(scores: Tensor, sequences: Tensor, real: Tensor, penalty: float) -> Tensor:
    """CTRL's penalty (Keskar et al., 2019) on every id already in a row: positive scores are
    divided by `penalty`, negative ones multiplied (RepetitionPenaltyLogitsProcessor).

    Args:
        scores: (N, V). sequences: (N, T) ids. real: (N, T) bool, False at padding.
        penalty: > 1 discourages repeats.
    """
    vocab = scores.shape[1]
    ids = sequences.masked_fill(~real, vocab)  # padding goes to a spare column, dropped below
    seen = torch.zeros(scores.shape[0], vocab + 1, dtype=torch.bool, device=scores.device)
    seen = seen.scatter_(1, ids, True)[:, :vocab]
    return torch.where(seen, torch.where(scores < 0, scores * penalty, scores / penalty), scores)


def ban_repeated_ngrams(scores: Tensor, sequences: Tensor, real: Tensor, size: int) -> Tensor:
    """Forbid each id that would complete an n-gram of `size` ids already in its row
    (NoRepeatNGramLogitsProcessor): a window of the row whose first size - 1 ids equal the row's
    last size - 1 bans its last id.

    Args:
        scores: (N, V). sequences: (N, T) ids. real: (N, T) bool, False at padding (the
            padding is on the left). size: n.
    """
    if sequences.shape[1] < size:
        return scores
    prefix = sequences[:, sequences.shape[1] + 1 - size :]
    windows = sequences.unfold(1, size, 1)  # (N, T - size + 1, size)
    whole = real[:, : windows.shape[1]]  # a window is all real where it starts: padding is on the left
    matches = (windows[..., :-1] == prefix[:, None]).all(dim=-1) & whole
    vocab = scores.shape[1]
    banned = torch.zeros(scores.shape[0], vocab + 1, dtype=torch.bool, device=scores.device)
    banned.scatter_(1, torch.where(matches, windows[..., -1], vocab), True)
    return scores.masked_fill(banned[:, :vocab], float("-inf"))


def process(
    scores: Tensor, sequences: Tensor, real: Tensor, new_tokens: int, config: GenerationConfig
) -> Tensor:
    """The processors `config` asks for, in Hugging Face's order (the warpers come later, in
    `warp`): scores (N, V) of the next id -> scores (N, V).

    Args:
        sequences: (N, T) each row's ids so far. real: (N, T) bool, False at padding.
        new_tokens: how many ids have been generated (min_new_tokens counts them).
    """
    if config.repetition_penalty != 1.0:
        scores = penalize_repetitions(scores, sequences, real, config.repetition_penalty)
    if config.no_repeat_ngram_size > 0:
        scores = ban_repeated_ngrams(scores, sequences, real, config.no_repeat_ngram_size)
    if config.eos_id is not None and new_tokens < config.min_new_tokens:
        scores = scores.clone()
        scores[:, config.eos_id] = float("-inf")
    return scores


def greedy_biases(
    config: GenerationConfig, first_step: int, steps: int, vocab: int, device: torch.device
) -> Tensor:
    """(steps, V) float32: what `process` does to greedy logits at `steps` consecutive steps from
    `first_step` ids generated, as biases to add, for a config where that is at most
    min_new_tokens' ban on EOS (GenerationConfig.greedy_biases_only): -inf at EOS while it is
    banned, as `process` writes it, and 0 elsewhere, which leaves each logit as it is."""
    biases = torch.zeros(steps, vocab, device=device)
    banned = min(steps, config.min_new_tokens - first_step)
    if config.eos_id is not None and banned > 0:
        biases[:banned, config.eos_id] = float("-inf")
    return biases


def top_p_filter(logits: Tensor, top_p: float, *, min_tokens_to_keep: int = 1) -> Tensor:
    """Nucleus filtering as Hugging Face's TopPLogitsWarper computes it: sorted from the least
    probable up, the ids whose cumulative probability stays at most 1 - top_p are dropped, the
    `min_tokens_to_keep` most probable never.

    zoo.decode.sampling.filter_logprobs states the same rule from the other end (keep an id while
    the mass before it is below p): equal in exact arithmetic, but its float sums differ from
    Hugging Face's where the mass reaches p exactly and among tied ids, so outputs could differ
    token for token. Its tests fix its own boundary, hence this separate warper.
    """
    sorted_logits, order = logits.sort(dim=-1, descending=False)
    drop_sorted = sorted_logits.softmax(dim=-1).cumsum(dim=-1) <= 1 - top_p
    drop_sorted[..., -min_tokens_to_keep:] = False
    drop = drop_sorted.scatter(1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def warp(logits: Tensor, config: GenerationConfig) -> Tensor:
    """The sampling warpers: temperature, top-k (both as filter_logprobs computes them, which is
    Hugging Face's arithmetic exactly), then top-p (`top_p_filter`); logits (N, V) -> (N, V)."""
    logits = filter_logprobs(logits, temperature=config.temperature, top_k=config.top_k)
    if config.top_p < 1.0:
        logits = top_p_filter(logits, config.top_p)
    return logits
