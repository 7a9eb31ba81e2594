"""The translation task: what the runner calls (Task protocol) and the decoding that evaluation,
the translate CLI and the final test score share."""

from __future__ import annotations

import math
from typing import Iterator

import sacrebleu
import torch
from torch import nn

from tasks.translation.config import DecodeConfig, TranslationConfig
from tasks.translation.data import Batch, EncodedSplit, TranslationData
from zoo.models import build_model
from tasks.translation.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer
from zoo.data.batching import token_batches
from zoo.decode import beam_search, greedy_search
from zoo.train import StepOutput, label_smoothed_cross_entropy
from zoo.train.distributed import init_distributed, main_process_first


def decode_ids(model: nn.Module, src: torch.Tensor, decode: DecodeConfig, beam_size: int) -> list[list[int]]:
    """Best hypothesis ids of each source row (greedy when beam_size == 1)."""
    special = dict(bos_idx=BOS_ID, eos_idx=EOS_ID, pad_idx=PAD_ID, extra_len=decode.extra_len)
    if beam_size == 1:
        return greedy_search(model, src, **special).best()
    return beam_search(model, src, beam_size=beam_size, alpha=decode.alpha, **special).best()


def translate_ids(model: nn.Module, sources: list[list[int]], decode: DecodeConfig, *,
                  beam_size: int, max_tokens: int) -> list[list[int]]:
    """Decode source id sequences (without EOS, as the tokenizer gives them) in length-sorted
    batches; returns the hypotheses in input order."""
    device = next(model.parameters()).device
    sources = [list(s) + [EOS_ID] for s in sources]  # training sources end with EOS too
    lengths = [len(s) for s in sources]
    budget = max([max_tokens, *lengths])
    outputs: list[list[int]] = [[] for _ in sources]
    for indices in token_batches(lengths, lengths, budget, shuffle=False):
        rows = [sources[i] for i in indices]
        src = torch.full((len(rows), max(map(len, rows))), PAD_ID, dtype=torch.long)
        for r, ids in enumerate(rows):
            src[r, :len(ids)] = torch.tensor(ids)
        for i, hyp in zip(indices, decode_ids(model, src.to(device), decode, beam_size)):
            outputs[int(i)] = hyp
    return outputs


def translate_text(model: nn.Module, tokenizer: Tokenizer, sentences: list[str], decode: DecodeConfig,
                   *, beam_size: int, max_tokens: int = 4096) -> list[str]:
    sources = [tokenizer.encode(s) for s in sentences]
    return tokenizer.decode_batch(translate_ids(model, sources, decode, beam_size=beam_size,
                                                max_tokens=max_tokens))


def score(hypotheses: list[str], references: list[str]) -> dict[str, float | str]:
    """sacreBLEU (13a tokenisation, on detokenised text) and chrF, with their signatures."""
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return {"bleu": bleu_score.score, "chrf": chrf_score.score,
            "bleu_signature": str(bleu.get_signature()), "chrf_signature": str(chrf.get_signature())}


def split_translations(model: nn.Module, tokenizer: Tokenizer, split: EncodedSplit,
                       decode: DecodeConfig, *, beam_size: int, max_tokens: int) -> list[str]:
    """Detokenised translations of every source sentence of an encoded split, in order."""
    sources = [split.source_ids(i) for i in range(len(split))]
    hyps = translate_ids(model, sources, decode, beam_size=beam_size, max_tokens=max_tokens)
    return tokenizer.decode_batch(hyps)


class TranslationTask:
    unit_name = "tokens"

    def __init__(self, cfg: TranslationConfig) -> None:
        self.cfg = cfg
        env = init_distributed(cfg.train.device)
        with main_process_first(env):  # one rank trains the tokenizer, the others load it
            self.data = TranslationData(cfg.data, cfg.train.out_dir, seed=cfg.train.seed)

    def build_model(self) -> nn.Module:
        return build_model(self.cfg.model, self.data.tokenizer.vocab_size, self.data.tokenizer.vocab_size, PAD_ID)

    def train_batches(self, epoch: int, *, start: int = 0, rank: int = 0,
                      world_size: int = 1) -> Iterator[Batch]:
        return self.data.train_batches(epoch, start=start, rank=rank, world_size=world_size)

    def train_step(self, model: nn.Module, batch: Batch) -> StepOutput:
        logits = model(batch.src, batch.tgt_in)
        loss, nll, tokens = label_smoothed_cross_entropy(
            logits, batch.tgt_out, smoothing=self.cfg.label_smoothing, ignore_index=PAD_ID)
        return StepOutput(loss, tokens, {"nll": nll})

    def evaluate(self, model: nn.Module, role: str = "valid", beam_size: int | None = None) -> dict[str, float]:
        """Teacher-forced NLL/perplexity and sacreBLEU of decoded translations on a split."""
        device = next(model.parameters()).device
        nll, tokens = 0.0, 0
        for batch in self.data.eval_batches(role):
            logits = model(batch.src.to(device), batch.tgt_in.to(device))
            _, batch_nll, batch_tokens = label_smoothed_cross_entropy(
                logits, batch.tgt_out.to(device), ignore_index=PAD_ID)
            nll, tokens = nll + batch_nll.item(), tokens + int(batch_tokens)
        split = self.data.split(role)
        beam = self.cfg.decode.eval_beam_size if beam_size is None else beam_size
        hyps = split_translations(model, self.data.tokenizer, split, self.cfg.decode, beam_size=beam,
                                  max_tokens=self.cfg.decode.max_tokens or self.cfg.data.max_tokens)
        scores = score(hyps, split.references)
        return {"nll": nll / tokens, "ppl": math.exp(min(nll / tokens, 50.0)),
                "bleu": scores["bleu"], "chrf": scores["chrf"]}
