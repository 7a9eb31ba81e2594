"""Beam search for a decoder-only language model, with Hugging Face's rules exactly
(`GenerationMixin._beam_search` of transformers 5), so that it returns the same ids as
`model.generate(num_beams=k)`. Its rules differ from the paper's beam search in zoo.decode.beam;
per prompt, at every step:

1. Each of the k live beams' processed log-probabilities (zoo.decode.logits_processors, applied
   to log-probabilities here, as Hugging Face does) plus its score; the 2k best (beam, id) pairs.
   At the first step only beam 0 proposes: the others start at -1e9.
2. A pair ends when its id ends the row (zoo.decode.lm_stopping: EOS, a stop string, the length
   limit). The k best pairs that do not end are the next live beams (ended ones count -1e9).
3. The pairs among the first k that end are finished hypotheses, scored log p / t ** length_penalty
   with t the new ids (the ending id counted); the k best finished hypotheses are kept.
4. The prompt is done once it holds k finished hypotheses and either early_stopping is True, or
   the best live beam, scored as if it ended at t' new ids, would not beat the worst of them:
   t' = the ids so far (early_stopping False, Hugging Face's heuristic), or the length limit
   when early_stopping is 'never' and length_penalty > 0. Also when every pair ends (the length
   limit).

Its best finished hypothesis is the output (its num_return_sequences best, best first). Done
prompts leave the batch; Hugging Face keeps them in it but adds nothing to them, so the results
are the same. The -1e9 stand-ins for -inf are Hugging Face's, kept so that ties and sums come out
bit for bit the same.

Shape key: n prompts still searching, k beams, V vocabulary size, W most new ids.
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.decode.lm_config import GenerationConfig
from zoo.decode.lm_state import LMState
from zoo.decode.lm_stopping import Stopping
from zoo.decode.logits_processors import process

NEG = -1.0e9  # Hugging Face's "impossible" score


class FinishedBeams:
    """The k best finished hypotheses of each prompt: scores (n, k), whether each slot holds one
    (a slot may hold a NEG-scored placeholder), and their ids (n, k, W) and lengths (n, k)."""

    def __init__(self, n: int, k: int, width: int, device: torch.device) -> None:
        self.scores = torch.full((n, k), NEG, device=device)
        self.filled = torch.zeros(n, k, dtype=torch.bool, device=device)
        self.tokens = torch.zeros(n, k, width, dtype=torch.long, device=device)
        self.lengths = torch.zeros(n, k, dtype=torch.long, device=device)

    def add(self, scores: Tensor, ended: Tensor, candidates: Tensor, length_penalty: float) -> None:
        """Offer the 2k pairs: scores (n, 2k) summed log-probabilities, ended (n, 2k) bool,
        candidates (n, 2k, t) their new ids; the first k that ended may join (rule 3)."""
        n, pairs, t = candidates.shape
        k = self.scores.shape[1]
        joins = ended.clone()
        joins[:, k:] = False
        normalised = scores / (t**length_penalty) + (~joins) * NEG
        padded = candidates.new_zeros(n, pairs, self.tokens.shape[2])
        padded[:, :, :t] = candidates
        merged = torch.cat([self.scores, normalised], dim=1)
        best = merged.topk(k, dim=1).indices
        self.scores = merged.gather(1, best)
        self.filled = torch.cat([self.filled, joins], dim=1).gather(1, best)
        lengths = self.lengths.new_full((n, pairs), t)
        self.lengths = torch.cat([self.lengths, lengths], dim=1).gather(1, best)
        tokens = torch.cat([self.tokens, padded], dim=1)
        self.tokens = tokens.gather(1, best[:, :, None].expand(-1, -1, tokens.shape[2]))

    def done(self, live_scores: Tensor, best_lengths: Tensor | int, config: GenerationConfig) -> Tensor:
        """(n,) rule 4 given the live beams' scores (n, k), best first, and the length each is
        supposed to end at (per prompt (n,), or one for all)."""
        lp = config.length_penalty
        if isinstance(best_lengths, int):
            best = live_scores[:, :1] / (best_lengths**lp)
        else:  # the same float32 divisor as Hugging Face's Python-float one
            divisor = torch.tensor(
                [length**lp for length in best_lengths.tolist()], device=live_scores.device
            )
            best = live_scores[:, :1] / divisor[:, None]
        worst = torch.where(self.filled, self.scores.min(dim=1, keepdim=True).values, NEG)
        done = ~(best > worst).any(dim=1)
        if config.early_stopping is True:
            done |= self.filled.all(dim=1)
        return done

    def best(self, prompt: int, n: int) -> list[list[int]]:
        """The prompt's n best hypotheses, best first."""
        return [self.tokens[prompt, i, : self.lengths[prompt, i]].tolist() for i in range(n)]

    def select(self, keep: Tensor) -> None:
        for name in ("scores", "filled", "tokens", "lengths"):
            setattr(self, name, getattr(self, name)[keep])


def _top_pairs(logprobs: Tensor, live_scores: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Rule 1: the 2k best (beam, id) pairs of each prompt by summed log-probability, from the
    beams' processed log-probabilities (n k, V) and scores (n, k): their scores, parent rows in
    the state and ids, each (n, 2k), best first."""
    n, k = live_scores.shape
    vocab = logprobs.shape[1]
    summed = (logprobs.view(n, k, vocab) + live_scores[:, :, None]).view(n, k * vocab)
    scores, index = summed.topk(2 * k, dim=1)
    parents = index // vocab + torch.arange(n, device=index.device)[:, None] * k
    return scores, parents, index % vocab


def beam_search_lm(
    state: LMState, config: GenerationConfig, stopping: Stopping, limits: list[int]
) -> list[list[int]]:
    """The config.num_return_sequences best hypotheses of each prompt, best first, one list after
    another (new ids, the ending id kept), by the rules above.

    Args:
        state: the prompts' rows (one each), nothing generated yet.
        config: num_beams, length_penalty, early_stopping and the processors' settings.
        stopping: what ends a row.
        limits: each prompt's most new ids.
    """
    n, k, device = len(limits), config.num_beams, state.tokens.device
    first = state.next_logits()  # the prefill runs once per prompt; its k beams copy it
    rows = torch.arange(n, device=device).repeat_interleave(k)
    state.select(rows)
    logits = first.index_select(0, rows)
    live_scores = torch.full((n, k), NEG, device=device)
    live_scores[:, 0] = 0.0
    finished = FinishedBeams(n, k, max(limits), device)
    active = torch.arange(n, device=device)
    limit = torch.tensor(limits, device=device)
    outputs: list[list[list[int]]] = [[] for _ in limits]
    never = config.early_stopping == "never" and config.length_penalty > 0.0
    for step in range(max(limits)):
        logprobs = process(logits.log_softmax(dim=-1), state.tokens, state.real, step, config)
        scores, parents, tokens = _top_pairs(logprobs, live_scores)
        n = active.numel()
        candidates = torch.cat([state.generated[parents], tokens[:, :, None]], dim=2)  # (n, 2k, t)
        ended = stopping.ended(candidates.view(n * 2 * k, -1), limit.repeat_interleave(2 * k)).view(n, 2 * k)
        # Rule 2: the k best pairs that go on (ended ones pushed down by NEG, as Hugging Face does).
        going_on = scores + ended.float() * NEG
        keep_pairs = going_on.topk(k, dim=1).indices
        live_scores = going_on.gather(1, keep_pairs)
        finished.add(scores, ended, candidates, config.length_penalty)
        # Rule 4; or every pair ended (the length limit; stop strings everywhere).
        done = finished.done(live_scores, limit if never else step + 1, config) | ended.all(dim=1)
        for prompt in done.nonzero().squeeze(1).tolist():
            outputs[int(active[prompt])] = finished.best(prompt, config.num_return_sequences)
        if done.all():
            break
        keep = (~done).nonzero().squeeze(1)  # done prompts leave the batch
        active, limit, live_scores = active[keep], limit[keep], live_scores[keep]
        finished.select(keep)
        state.select(parents.gather(1, keep_pairs)[keep].view(-1))
        state.append(tokens.gather(1, keep_pairs)[keep].view(-1, 1))
        logits = state.next_logits()
    return [hypothesis for best in outputs for hypothesis in best]
