"""Reverse-the-sequence: src = x, target = reversed(x). Data is generated from (seed, epoch,
batch), so any batch can be regenerated exactly (resume) and split across ranks (DDP)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch
from torch import Tensor, nn

from tasks.reverse.config import ReverseConfig
from zoo.models import build_model
from zoo.train import StepOutput, label_smoothed_cross_entropy

PAD, BOS, EOS = 0, 1, 2
FIRST_SYMBOL = 3


@dataclass
class Batch:
    src: Tensor      # (B, S) symbols, right-padded
    tgt_in: Tensor   # (B, T) BOS + reversed symbols
    tgt_out: Tensor  # (B, T) reversed symbols + EOS


def make_batch(size: int, cfg: ReverseConfig, generator: torch.Generator) -> Batch:
    d = cfg.data
    lengths = torch.randint(d.min_len, d.max_len + 1, (size,), generator=generator)
    symbols = torch.randint(FIRST_SYMBOL, FIRST_SYMBOL + d.num_symbols, (size, d.max_len),
                            generator=generator)
    src = torch.full((size, d.max_len), PAD)
    tgt_in = torch.full((size, d.max_len + 1), PAD)
    tgt_out = torch.full((size, d.max_len + 1), PAD)
    for i, n in enumerate(lengths.tolist()):
        seq = symbols[i, :n]
        src[i, :n] = seq
        tgt_in[i, 0], tgt_in[i, 1:n + 1] = BOS, seq.flip(0)
        tgt_out[i, :n], tgt_out[i, n] = seq.flip(0), EOS
    return Batch(src, tgt_in, tgt_out)


class ReverseTask:
    unit_name = "tokens"

    def __init__(self, cfg: ReverseConfig) -> None:
        self.cfg = cfg
        self.vocab_size = FIRST_SYMBOL + cfg.data.num_symbols
        valid_gen = torch.Generator().manual_seed(cfg.train.seed + 10_000_019)
        self.valid = make_batch(cfg.data.valid_size, cfg, valid_gen)

    def build_model(self) -> nn.Module:
        return build_model(self.cfg.model, self.vocab_size, self.vocab_size, PAD)

    def train_batches(self, epoch: int, *, start: int = 0, rank: int = 0,
                      world_size: int = 1) -> Iterator[Batch]:
        d = self.cfg.data
        if d.batch_size % world_size:
            raise ValueError(f"data.batch_size {d.batch_size} is not divisible by {world_size} ranks")
        per_rank = d.batch_size // world_size
        for index in range(start, d.batches_per_epoch):
            seed = (self.cfg.train.seed * 1_000_003 + epoch) * 1_000_003 + index
            full = make_batch(d.batch_size, self.cfg, torch.Generator().manual_seed(seed))
            rows = slice(rank * per_rank, (rank + 1) * per_rank)
            yield Batch(full.src[rows], full.tgt_in[rows], full.tgt_out[rows])

    def train_step(self, model: nn.Module, batch: Batch) -> StepOutput:
        logits = model(batch.src, batch.tgt_in)
        loss, nll, tokens = label_smoothed_cross_entropy(
            logits, batch.tgt_out, smoothing=self.cfg.data.smoothing, ignore_index=PAD)
        correct = ((logits.argmax(-1) == batch.tgt_out) & (batch.tgt_out != PAD)).sum()
        return StepOutput(loss, tokens, {"nll": nll, "token_acc": correct})

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        device = next(model.parameters()).device
        v = self.valid
        logits = model(v.src.to(device), v.tgt_in.to(device))
        target = v.tgt_out.to(device)
        real = target != PAD
        correct = (logits.argmax(-1) == target) & real
        return {"token_acc": correct.sum().item() / real.sum().item(),
                "seq_acc": (correct | ~real).all(dim=1).float().mean().item()}
