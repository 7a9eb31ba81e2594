"""BERT pretraining as a runner Task: two loss terms, masked LM per predicted token and next
sentence prediction per pair, each normalised by its own count (exact under accumulation and
DDP, since the counts are known before the forward)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import torch.nn.functional as F
from torch import nn

from tasks.bert.config import BertPretrainingConfig
from tasks.bert.data import EVAL_SEED, TOKENIZER_FILE, load_documents, make_examples, tokenizer_for
from tasks.bert.examples import IGNORE_INDEX, Batch, PretrainingExamples
from zoo.config import UserError
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import Bert, FixedWidthPositions, PretrainingLogits, build_bert, fixed_width_positions
from zoo.train import RunContext, Term, move_to


def pretraining_terms(
    logits: PretrainingLogits, batch: Batch, positions: FixedWidthPositions | None = None
) -> dict[str, Term]:
    """Summed cross-entropies and correct counts: `logits.mlm` holds the predicted positions
    only, (M, V) in the row-major order of `batch.mlm_labels != IGNORE_INDEX`, or (B, P, V) at
    fixed-width `positions`."""
    if positions is None:
        targets = batch.mlm_labels[batch.mlm_labels != IGNORE_INDEX]
    else:
        targets = batch.mlm_labels.gather(1, positions.index).masked_fill(~positions.taken, IGNORE_INDEX)
    mlm_logits, targets = logits.mlm.flatten(0, -2), targets.flatten()
    mlm = F.cross_entropy(mlm_logits.float(), targets, reduction="sum", ignore_index=IGNORE_INDEX)
    nsp = F.cross_entropy(logits.nsp.float(), batch.nsp_labels, reduction="sum")
    mlm_correct = (mlm_logits.detach().argmax(dim=-1) == targets).sum()  # never IGNORE_INDEX
    nsp_correct = (logits.nsp.detach().argmax(dim=-1) == batch.nsp_labels).sum()
    return {
        "mlm": Term(mlm, {"acc": 100.0 * mlm_correct}),  # logged as mlm_acc, nsp_acc
        "nsp": Term(nsp, {"acc": 100.0 * nsp_correct}),
    }


def forward(
    model: nn.Module, batch: Batch, positions: FixedWidthPositions | None = None
) -> PretrainingLogits:
    """The model on a batch, the MLM head at the predicted positions only (given as
    fixed-width `positions`, or else as the mask of the labels)."""
    return model(
        batch.input_ids,
        batch.token_type_ids,
        batch.attention_mask,
        masked_positions=batch.mlm_labels != IGNORE_INDEX if positions is None else positions.index,
    )


def score_examples(
    model: nn.Module, examples: PretrainingExamples, *, batch_size: int, limit: int = 0
) -> dict[str, float]:
    """MLM accuracy (%), loss and perplexity, NSP accuracy (%) and loss over examples (epoch 0;
    the first `limit` only when > 0). Run it under zoo.train.evaluation."""
    device = next(model.parameters()).device
    count = len(examples.pairs(0)) if limit <= 0 else min(limit, len(examples.pairs(0)))
    sums = dict.fromkeys(("mlm", "mlm_acc", "nsp", "nsp_acc", "masked", "pairs"), 0.0)
    for start in range(0, count, batch_size):
        batch = move_to(examples.collate(0, range(start, min(start + batch_size, count))), device)
        terms = pretraining_terms(forward(model, batch), batch)
        for name, term in terms.items():
            sums[name] += float(term.loss)
            sums[f"{name}_acc"] += float(term.metrics["acc"])
        sums["masked"] += int((batch.mlm_labels != IGNORE_INDEX).sum())
        sums["pairs"] += len(batch)
    mlm_loss = sums["mlm"] / sums["masked"]
    return {
        "mlm_acc": sums["mlm_acc"] / sums["masked"],
        "mlm_loss": mlm_loss,
        "mlm_ppl": math.exp(min(mlm_loss, 50.0)),
        "nsp_acc": sums["nsp_acc"] / sums["pairs"],
        "nsp_loss": sums["nsp"] / sums["pairs"],
        "examples": float(count),
    }


class BertTask:
    """The runner's Task for BERT pretraining.

    Args:
        cfg: the whole recipe.
    """

    unit_name = "tokens"

    def __init__(self, cfg: BertPretrainingConfig) -> None:
        self.cfg = cfg

    def setup(self, run: RunContext) -> None:
        """Documents, then the tokenizer (rank 0 trains it first, the others read its file),
        then the examples."""
        self.run = run
        dc = self.cfg.data
        train_documents = load_documents(dc, "train")
        with run.main_process_first():
            self.tokenizer = tokenizer_for(dc, run.run_dir, train_documents)
        self.train = make_examples(train_documents, self.tokenizer, dc, seed=run.seed)
        self.valid = make_examples(load_documents(dc, "valid"), self.tokenizer, dc, seed=EVAL_SEED)

    def build_model(self) -> Bert:
        return build_bert(self.cfg.model, self.tokenizer.vocab_size, self.tokenizer.pad_id)

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[Batch]:
        batch_size, ranks = self.cfg.data.batch_size, self.run.world_size
        # Checked here, before the generator starts: zoo.data.batching.shard's own message names
        # data.max_tokens, a key of the token-budget tasks that BERT's recipe does not have.
        full = len(self.train.batch_indices(epoch, batch_size))
        if full < ranks:
            raise UserError(
                f"{len(self.train.pairs(epoch)):,} training pairs make {full} full batch(es) of "
                f"data.batch_size={batch_size}, fewer than the {ranks} rank(s): lower data.batch_size"
            )
        return self.train.batches(epoch, batch_size, start=start, rank=self.run.rank, world_size=ranks)

    def units(self, batch: Batch) -> dict[str, int]:
        return {
            "mlm": int((batch.mlm_labels != IGNORE_INDEX).sum()),
            "nsp": len(batch),
            "tokens": int(batch.attention_mask.sum()),
        }

    def train_step(self, model: nn.Module, batch: Batch) -> dict[str, Term]:
        # A compiled model gets the predicted positions at a fixed width, as the original's
        # input pipeline gave them: a mask's count of positions is data, and breaks the graph.
        positions = (
            fixed_width_positions(batch.mlm_labels != IGNORE_INDEX, self.cfg.data.max_predictions_per_seq)
            if self.cfg.train.compile
            else None
        )
        return pretraining_terms(forward(model, batch, positions), batch, positions)

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        return score_examples(
            model, self.valid, batch_size=self.cfg.data.eval_batch_size, limit=self.cfg.data.eval_limit
        )

    def artifacts(self) -> dict[str, bytes]:
        return {TOKENIZER_FILE: self.tokenizer.to_bytes()}


def tokenizer_of(artifacts: dict[str, bytes], source: Path) -> WordPieceTokenizer:
    """The tokenizer a checkpoint carries; `source`, the checkpoint, starts a corrupt one's error."""
    if TOKENIZER_FILE not in artifacts:
        raise UserError(f"{source}: the checkpoint carries no {TOKENIZER_FILE} (not a BERT run?)")
    return WordPieceTokenizer.from_bytes(artifacts[TOKENIZER_FILE], source=f"{source}: {TOKENIZER_FILE}")
