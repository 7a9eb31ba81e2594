"""The translation task: what the runner calls (Task protocol) and the decoding that evaluation,
the translate CLI and the final test score share."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import sacrebleu
import torch
from torch import Tensor, nn

from tasks.translation.config import DecodeConfig, TranslationConfig
from tasks.translation.data import EncodedSplit, TranslationData
from zoo.data.batching import accumulation_for
from zoo.data.seq2seq import Ids, Seq2SeqBatch
from zoo.data.special import SPECIAL_IDS
from zoo.data.tokenizer import SentencePieceTokenizer
from zoo.decode import Hypotheses, beam_search, decode_sorted, greedy_search, sample
from zoo.decode.prefix import ForcedPrefixes
from zoo.models import build_model
from zoo.train import RunContext, Term

log = logging.getLogger(__name__)
TOKENIZER_ARTIFACT = "spm.model"


@dataclass(frozen=True)
class Sampling:
    """Ancestral sampling instead of search (zoo.decode.sample): fairseq's --sampling, as
    back-translation uses it; the settings are Hugging Face's names."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0


def translate_ids(
    model: nn.Module,
    sources: Ids | list[list[int]],
    decode: DecodeConfig,
    *,
    beam_size: int,
    max_tokens: int,
    n_best: int = 0,
    sampling: Sampling | None = None,
    prefixes: ForcedPrefixes | None = None,
) -> list[list[int]] | list[list[tuple[list[int], float]]]:
    """Best hypothesis ids of each source id sequence (without EOS, as the tokenizer gives
    them), in input order; greedy when beam_size == 1, one sample each with `sampling` (drawn
    from one stream seeded by sampling.seed, batch after batch). With n_best >= 1 (at most
    beam_size), each source's n_best best hypotheses instead, as (ids, score), best first: beam
    search then runs until its n_best-th finished hypothesis cannot be beaten (zoo.decode.beam),
    and its scores are length-normalised (greedy search's and samples': summed log-probabilities).
    `prefixes` makes each output begin with its source's prefix (zoo.decode.prefix; CTranslate2's
    target_prefix)."""
    limits = dict(special=SPECIAL_IDS, max_len_a=decode.max_len_a, max_len_b=decode.max_len_b)
    if sampling is not None:
        device = next(model.parameters()).device
        generator = torch.Generator(device=device).manual_seed(sampling.seed)
        search = partial(sample, model, temperature=sampling.temperature, top_k=sampling.top_k,
                         top_p=sampling.top_p, generator=generator, **limits)  # fmt: skip
    elif beam_size == 1:
        search = partial(greedy_search, model, **limits)
    else:
        search = partial(
            beam_search,
            model,
            beam_size=beam_size,
            alpha=decode.alpha,
            patience=decode.patience or None,
            n_best=max(n_best, 1),
            **limits,
        )

    def batch_search(src: Tensor, positions: Tensor) -> Hypotheses:
        return search(src, allowed_tokens=prefixes.hook(positions)) if prefixes else search(src)

    return decode_sorted(
        model, sources, batch_search, special=SPECIAL_IDS, max_tokens=max_tokens,
        keep=Hypotheses.nbest if n_best else Hypotheses.best,
    )  # fmt: skip


def score(hypotheses: list[str], references: list[str]) -> dict[str, float | str]:
    """sacreBLEU (13a tokenisation, on detokenised text) and chrF, with their signatures."""
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return {
        "bleu": bleu_score.score,
        "chrf": chrf_score.score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def split_translations(
    model: nn.Module,
    tokenizer: SentencePieceTokenizer,
    split: EncodedSplit,
    decode: DecodeConfig,
    *,
    beam_size: int,
    max_tokens: int,
) -> list[str]:
    """Detokenised translations of every source sentence of an encoded split, in order."""
    hyps = translate_ids(model, split.pairs.src, decode, beam_size=beam_size, max_tokens=max_tokens)
    return tokenizer.decode_batch(hyps)


def build_translation_model(cfg: TranslationConfig, tokenizer: SentencePieceTokenizer) -> nn.Module:
    """The recipe's Transformer over the tokenizer's joint vocabulary."""
    return build_model(cfg.model, tokenizer.vocab_size, tokenizer.vocab_size, SPECIAL_IDS.pad)


class TranslationTask:
    unit_name = "tokens"

    def __init__(self, cfg: TranslationConfig) -> None:
        self.cfg = cfg
        self.data: TranslationData | None = None

    def grad_accum(self, world_size: int) -> int | None:
        """Micro-batches per step for data.tokens_per_step (None: train.grad_accum). The paper's
        batches are counted in tokens per step, whatever the number of ranks; the runner asks
        this once and keeps the answer in its RunContext, leaving the recipe as written."""
        tokens = self.cfg.data.tokens_per_step
        if not tokens:
            return None
        accum = accumulation_for(tokens, self.cfg.data.max_tokens, world_size)
        log.info("data.tokens_per_step=%d: train.grad_accum=%d on %d rank(s)", tokens, accum, world_size)
        return accum

    def setup(self, run: RunContext) -> None:
        """Tokenizer and encoded splits; rank 0 trains the tokenizer, the others then load it."""
        with run.main_process_first():
            self.data = TranslationData(
                self.cfg.data,
                run.run_dir,
                seed=run.seed,
                rank=run.rank,
                world_size=run.world_size,
                positions=self.cfg.model.max_len,
            )

    def build_model(self) -> nn.Module:
        return build_translation_model(self.cfg, self.data.tokenizer)

    def artifacts(self) -> dict[str, bytes]:
        """The vocabulary travels inside every checkpoint: a trained run is self-contained."""
        return {TOKENIZER_ARTIFACT: self.data.tokenizer.model}

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[Seq2SeqBatch]:
        return self.data.train_batches(epoch, start=start)

    def units(self, batch: Seq2SeqBatch) -> dict[str, int]:
        return {"loss": batch.tgt_tokens}

    def train_step(self, model: nn.Module, batch: Seq2SeqBatch) -> dict[str, Term]:
        sums = model(batch.src, batch.tgt_in, batch.tgt_out, smoothing=self.cfg.label_smoothing)
        return {"loss": Term(sums.loss, {"nll": sums.nll})}

    def evaluate(
        self, model: nn.Module, role: str = "valid", beam_size: int | None = None
    ) -> dict[str, float]:
        """Teacher-forced NLL/perplexity and sacreBLEU of decoded translations on a split.

        Call it under zoo.train.evaluation (the runner does): eval mode, no_grad, the run's autocast.
        """
        device = next(model.parameters()).device
        nll, tokens = 0.0, 0
        for batch in self.data.eval_batches(role):
            sums = model(batch.src.to(device), batch.tgt_in.to(device), batch.tgt_out.to(device))
            nll, tokens = nll + sums.nll.item(), tokens + int(sums.units)
        split = self.data.split(role)
        beam = self.cfg.decode.eval_beam_size if beam_size is None else beam_size
        hyps = split_translations(
            model,
            self.data.tokenizer,
            split,
            self.cfg.decode,
            beam_size=beam,
            max_tokens=self.cfg.decode.max_tokens or self.cfg.data.max_tokens,
        )
        scores = score(hyps, split.references)
        return {
            "nll": nll / tokens,
            "ppl": math.exp(min(nll / tokens, 50.0)),
            "bleu": scores["bleu"],
            "chrf": scores["chrf"],
        }
