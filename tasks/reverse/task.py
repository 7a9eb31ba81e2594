"""Reverse-the-sequence: src = x, target = reversed(x). Each batch is generated from its own
stream of (seed, epoch, batch) (zoo.data.seeding), so any batch can be regenerated exactly
(resume) and split across ranks (DDP)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from torch import nn

from tasks.reverse.config import ReverseConfig
from zoo.config import UserError
from zoo.data.seeding import example_generator
from zoo.data.seq2seq import Ids, Seq2SeqBatch, SequencePairs
from zoo.data.special import SPECIAL_IDS
from zoo.models import build_model
from zoo.train import RunContext, Term, label_smoothed_cross_entropy

PAD = SPECIAL_IDS.pad
FIRST_SYMBOL = SPECIAL_IDS.reserved
PAIRS = 1  # the zoo.data.seeding stream of the training pairs


def make_pairs(size: int, cfg: ReverseConfig, generator: torch.Generator) -> SequencePairs:
    """`size` random sequences (symbols FIRST_SYMBOL..) paired with their reversals."""
    d = cfg.data
    lengths = torch.randint(d.min_len, d.max_len + 1, (size,), generator=generator).tolist()
    symbols = torch.randint(
        FIRST_SYMBOL, FIRST_SYMBOL + d.num_symbols, (size, d.max_len), generator=generator
    ).tolist()
    src = [row[:n] for row, n in zip(symbols, lengths)]
    return SequencePairs(Ids.from_rows(src), Ids.from_rows([row[::-1] for row in src]))


class ReverseTask:
    unit_name = "tokens"

    def __init__(self, cfg: ReverseConfig) -> None:
        self.cfg = cfg
        self.vocab_size = FIRST_SYMBOL + cfg.data.num_symbols
        self.run: RunContext | None = None

    def setup(self, run: RunContext) -> None:
        if self.cfg.data.batch_size % run.world_size:
            raise UserError(
                f"data.batch_size {self.cfg.data.batch_size} is not divisible by {run.world_size} ranks"
            )
        self.run = run
        valid_gen = torch.Generator().manual_seed(self.cfg.train.seed + 10_000_019)
        size = self.cfg.data.valid_size
        self.valid = make_pairs(size, self.cfg, valid_gen).collate(np.arange(size), SPECIAL_IDS)

    def build_model(self) -> nn.Module:
        return build_model(self.cfg.model, self.vocab_size, self.vocab_size, PAD)

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[Seq2SeqBatch]:
        d, rank = self.cfg.data, self.run.rank  # every rank draws the global batch, keeps its rows
        per_rank = d.batch_size // self.run.world_size
        for index in range(start, d.batches_per_epoch):
            generator = example_generator(self.cfg.train.seed, epoch, index, stream=PAIRS)
            pairs = make_pairs(d.batch_size, self.cfg, generator)
            yield pairs.collate(np.arange(rank * per_rank, (rank + 1) * per_rank), SPECIAL_IDS)

    def units(self, batch: Seq2SeqBatch) -> dict[str, int]:
        return {"loss": batch.tgt_tokens}

    def train_step(self, model: nn.Module, batch: Seq2SeqBatch) -> dict[str, Term]:
        logits = model(batch.src, batch.tgt_in)
        loss, nll, _ = label_smoothed_cross_entropy(
            logits, batch.tgt_out, smoothing=self.cfg.label_smoothing, ignore_index=PAD
        )
        correct = ((logits.argmax(-1) == batch.tgt_out) & (batch.tgt_out != PAD)).sum()
        return {"loss": Term(loss, {"nll": nll, "token_acc": correct})}

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        device = next(model.parameters()).device
        v = self.valid
        logits = model(v.src.to(device), v.tgt_in.to(device))
        target = v.tgt_out.to(device)
        real = target != PAD
        correct = (logits.argmax(-1) == target) & real
        return {
            "token_acc": correct.sum().item() / real.sum().item(),
            "seq_acc": (correct | ~real).all(dim=1).float().mean().item(),
        }
