"""GPT language modelling as a runner Task: next-token cross-entropy per predicted token, the
projection and the loss fused (no (B, T, V) logits), validated by sliding-window perplexity on
the held-out text."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import nn

from tasks.gpt.config import GPTConfig, GPTDataConfig
from tasks.gpt.data import LMBatch, TokenBlocks, load_texts, token_stream
from tasks.gpt.perplexity import sliding_window_nll
from zoo.config import UserError
from zoo.data.bpe import ByteBPETokenizer
from zoo.data.paths import write_atomic
from zoo.models.gpt import GPT, build_gpt
from zoo.train import RunContext, Term

log = logging.getLogger(__name__)
TOKENIZER_FILE = "tokenizer.json"


def tokenizer_for(data: GPTDataConfig, run_dir: Path, texts: list[str]) -> ByteBPETokenizer:
    """The run's tokenizer: the run's own file when it exists (a resumed run), else the one
    `data.tokenizer` names, else byte-level BPE trained on the training `texts` (then saved in
    the run, so a resumed run never retrains it)."""
    saved = run_dir / TOKENIZER_FILE
    if saved.is_file():
        return ByteBPETokenizer.from_json_file(saved)
    if data.tokenizer:
        tokenizer = ByteBPETokenizer.from_path(data.tokenizer)
    else:
        tokenizer = ByteBPETokenizer.train(texts, data.vocab_size)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(saved, tokenizer.to_bytes())
    return tokenizer


def tokenizer_of(artifacts: dict[str, bytes], source: Path) -> ByteBPETokenizer:
    """The tokenizer a checkpoint carries."""
    if TOKENIZER_FILE not in artifacts:
        raise UserError(f"{source}: the checkpoint carries no {TOKENIZER_FILE} (not a GPT run?)")
    return ByteBPETokenizer.from_bytes(artifacts[TOKENIZER_FILE], source=f"{source}: {TOKENIZER_FILE}")


class GPTTask:
    """The runner's Task for language modelling.

    Args:
        cfg: the whole recipe.
    """

    unit_name = "tokens"

    def __init__(self, cfg: GPTConfig) -> None:
        self.cfg = cfg

    def setup(self, run: RunContext) -> None:
        """Texts, then the tokenizer (rank 0 trains it first, the others read its file), then the
        token streams."""
        self.run = run
        d = self.cfg.data
        texts = load_texts(d, "train")
        with run.main_process_first():
            self.tokenizer = tokenizer_for(d, run.run_dir, texts)
        self.blocks = TokenBlocks(token_stream(texts, self.tokenizer), d.context)
        valid = torch.from_numpy(token_stream(load_texts(d, "valid"), self.tokenizer)).long()
        self.valid_ids = valid[: d.eval_limit] if d.eval_limit else valid

    def build_model(self) -> GPT:
        model = build_gpt(self.cfg.model, self.tokenizer.vocab_size)
        context = self.cfg.data.context
        log.info(
            "GPT: %s parameters (%s without the embeddings), %.1f MFLOPs per token to train at context %d",
            f"{model.num_parameters():,}", f"{model.num_parameters(embeddings=False):,}",
            model.flops_per_token(context) / 1e6, context,
        )  # fmt: skip
        return model

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[LMBatch]:
        return self.blocks.batches(
            epoch,
            self.cfg.data.batch_size,
            seed=self.run.seed,
            start=start,
            rank=self.run.rank,
            world_size=self.run.world_size,
        )

    def units(self, batch: LMBatch) -> dict[str, int]:
        return {"loss": batch.targets.numel()}

    def train_step(self, model: nn.Module, batch: LMBatch) -> dict[str, Term]:
        sums = model(batch.ids, batch.targets)
        return {"loss": Term(sums.loss)}

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out loss and perplexity per token over a sliding window (eval.stride)."""
        d = self.cfg.data
        stride = self.cfg.eval.stride or d.context // 2
        nll, tokens = sliding_window_nll(
            model, self.valid_ids, context=d.context, stride=stride, batch_size=d.eval_batch_size
        )
        loss = nll / tokens
        return {"loss": loss, "ppl": math.exp(min(loss, 50.0))}

    def artifacts(self) -> dict[str, bytes]:
        return {TOKENIZER_FILE: self.tokenizer.to_bytes()}
