"""A toy task for the runner's tests: tagging padded sequences, optionally with a second loss
term per sequence (two terms with different units, as BERT's MLM and NSP).

Token i of a sequence is to be tagged (3 * token) mod (V - 1) + 1; with `two_terms`, each
sequence is also classified by whether its first token is in the lower half of the vocabulary.
Batches are a pure function of (seed, epoch, rank, index), so resume and DDP can be checked
exactly.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.train import OptimConfig, RunConfig, RunContext, ScheduleConfig, Term, TrainConfig


@dataclass
class ToyData:
    vocab: int = 16
    max_len: int = 8
    batch_size: int = 16
    batches_per_epoch: int = 5


@dataclass
class ToyConfig(RunConfig):
    data: ToyData = field(default_factory=ToyData)
    dim: int = 32
    dropout: float = 0.0
    two_terms: bool = False


@dataclass
class Batch:
    tokens: Tensor  # (B, T), 0 = padding
    tags: Tensor  # (B, T), 0 at padding
    label: Tensor  # (B,)


def make_batch(cfg: ToyConfig, generator: torch.Generator, size: int) -> Batch:
    d = cfg.data
    lengths = torch.randint(1, d.max_len + 1, (size,), generator=generator)
    tokens = torch.randint(1, d.vocab, (size, d.max_len), generator=generator)
    tokens = tokens * (torch.arange(d.max_len) < lengths[:, None])
    tags = torch.where(tokens > 0, (3 * tokens) % (d.vocab - 1) + 1, 0)
    return Batch(tokens, tags, (tokens[:, 0] < d.vocab // 2).long())


class ToyModel(nn.Module):
    def __init__(self, vocab: int, dim: int, dropout: float) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.hidden = nn.Sequential(nn.Dropout(dropout), nn.Linear(dim, dim), nn.ReLU())
        self.tagger = nn.Linear(dim, vocab)
        self.classifier = nn.Linear(dim, 2)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        h = self.hidden(self.embed(tokens))
        return self.tagger(h), self.classifier(h[:, 0])


class ToyTask:
    unit_name = "tokens"

    def __init__(self, cfg: ToyConfig) -> None:
        self.cfg = cfg
        self.seen_dtypes: list[torch.dtype] = []  # logits dtypes, to prove autocast ran
        self.eval_grad_enabled: list[bool] = []

    def setup(self, run: RunContext) -> None:
        self.run = run
        self.valid = make_batch(self.cfg, torch.Generator().manual_seed(10_000 + self.cfg.train.seed), 128)

    def build_model(self) -> nn.Module:
        return ToyModel(self.cfg.data.vocab, self.cfg.dim, self.cfg.dropout)

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[Batch]:
        per_rank = self.cfg.data.batch_size // self.run.world_size
        for index in range(start, self.cfg.data.batches_per_epoch):
            seed = hash((self.cfg.train.seed, epoch, index)) % 2**31
            full = make_batch(self.cfg, torch.Generator().manual_seed(seed), self.cfg.data.batch_size)
            rows = slice(self.run.rank * per_rank, (self.run.rank + 1) * per_rank)
            yield Batch(full.tokens[rows], full.tags[rows], full.label[rows])

    def units(self, batch: Batch) -> dict[str, int]:
        tokens = int((batch.tokens > 0).sum())
        if self.cfg.two_terms:
            return {"tag": tokens, "cls": len(batch.label), "tokens": tokens}
        return {"loss": tokens}

    def train_step(self, model: nn.Module, batch: Batch) -> dict[str, Term]:
        tag_logits, cls_logits = model(batch.tokens)
        self.seen_dtypes.append(tag_logits.dtype)
        tag = F.cross_entropy(
            tag_logits.float().flatten(0, 1), batch.tags.flatten(), ignore_index=0, reduction="sum"
        )
        correct = ((tag_logits.argmax(-1) == batch.tags) & (batch.tags > 0)).sum()
        if not self.cfg.two_terms:
            return {"loss": Term(tag, {"correct": correct})}
        cls = F.cross_entropy(cls_logits.float(), batch.label, reduction="sum")
        return {
            "tag": Term(tag, {"correct": correct}),
            "cls": Term(cls, {"correct": (cls_logits.argmax(-1) == batch.label).sum()}),
        }

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        self.eval_grad_enabled.append(torch.is_grad_enabled())
        device = next(model.parameters()).device
        tag_logits, _ = model(self.valid.tokens.to(device))
        real = self.valid.tags.to(device) > 0
        hits = (tag_logits.argmax(-1) == self.valid.tags.to(device)) & real
        return {"token_acc": (hits.sum() / real.sum()).item()}


def tiny_config(out_dir: str, **train: object) -> ToyConfig:
    """SGD so that updates are linear in the gradients (exactness tests compare weights)."""
    cfg = ToyConfig()
    cfg.train = TrainConfig(
        out_dir=out_dir, max_steps=4, log_every=1, progress=False, tensorboard=False, threads=1, **train
    )
    cfg.optim = OptimConfig(name="sgd", lr=0.5, momentum=0.0)
    cfg.schedule = ScheduleConfig(name="constant", warmup_steps=0)
    return cfg


if __name__ == "__main__":  # a CLI for the fault tests: python tests/zoo/train/toy.py --key=value
    from zoo.cli import main_guard
    from zoo.config import parse_cli
    from zoo.train import fit

    @main_guard
    def main() -> None:
        cfg = parse_cli(ToyConfig, None, default_config=None, description="toy task")
        result = fit(cfg, ToyTask(cfg))
        print(f"done at step {result.step}")

    sys.exit(main())
