"""The protocol between the runner and a task. The runner knows this and nothing else."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from torch import Tensor, nn

from zoo.train.distributed import DistEnv, main_process_first


@dataclass
class RunContext(DistEnv):
    """What a task may know of the run: its place among the ranks, the device, the run
    directory, the seed, and the values the runner derives from the recipe. The runner hands it
    to `Task.setup` before anything else, so tasks never read RANK/WORLD_SIZE or initialise
    torch.distributed themselves, and nothing derived is written back into the recipe.

    Args (beyond DistEnv's rank, world_size, local_rank, device):
        run_dir: the run directory (tokenizers and other run files go here).
        seed: the run's seed (`train.seed`).
        precision: "fp32" or "bf16", as the runner trains and evaluates.
        grad_accum: micro-batches per optimizer step on each rank (see `step_accumulation`).
    """

    run_dir: Path = Path(".")
    seed: int = 0
    precision: str = "fp32"
    grad_accum: int = 1

    def main_process_first(self) -> contextlib.AbstractContextManager[None]:
        """Rank 0 runs the block first (trains a tokenizer, say), then the others find its output."""
        return main_process_first(self)


@dataclass
class Term:
    """One loss term of a micro-batch.

    loss: the term's loss SUMMED over its units (masked tokens, pairs, images, ...).
    metrics: other sums over the same units (correct predictions, nll); logged as per-unit means.
    """

    loss: Tensor
    metrics: dict[str, float | Tensor] = field(default_factory=dict)


class Task(Protocol):
    """What the runner calls. The objective of a step is, for each loss term t,
    (sum of t's losses over every micro-batch of every rank) / (t's total units), summed over
    terms: exactly the objective of one batch holding the whole step, however it is split.
    """

    unit_name: str  # what throughput counts: "tokens", "images", ...

    def setup(self, run: RunContext) -> None:
        """Prepare data (tokenizers, encoded splits) for this run; called once, first."""

    def build_model(self) -> nn.Module:
        """The model, freshly initialised from the task's config (the runner seeds first)."""

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterable[Any]:
        """This rank's batches of `epoch`, skipping its first `start` (for exact resume).

        Must be a deterministic function of (config seed, epoch, rank), and every rank must
        yield the same number of batches (see zoo.data.batching.shard).
        """

    def units(self, batch: Any) -> dict[str, int]:
        """For each loss term of `batch`, the count its summed loss is divided by.

        Known before the forward, so the runner can scale each micro-batch's loss by the step's
        global totals and keep several terms exact under accumulation and DDP. It may also hold
        `unit_name` for throughput; otherwise the first term's count is used.
        """

    def train_step(self, model: nn.Module, batch: Any) -> dict[str, Term]:
        """Forward one micro-batch (already on the device): its loss terms, keyed as in units()."""

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Validation metrics. The runner calls it on rank 0 only, in eval mode, under no_grad
        and the run's autocast (zoo.train.evaluation); the other ranks wait."""


def step_accumulation(task: Any, world_size: int, configured: int) -> int:
    """Micro-batches per optimizer step: what the task derives from its recipe for `world_size`
    ranks (optional `grad_accum(world_size) -> int | None`: translation counts a step in tokens),
    else `configured` (`train.grad_accum`). The runner keeps the result in the RunContext; the
    recipe, and so config.yaml and every checkpoint's config, stay as the user wrote them."""
    derive = getattr(task, "grad_accum", None)
    derived = derive(world_size) if derive is not None else None
    return configured if derived is None else derived


def task_artifacts(task: Any) -> dict[str, bytes]:
    """The files a task keeps inside every checkpoint (optional `artifacts()`), so that one
    checkpoint file is a self-contained trained model (its tokenizer travels with it)."""
    artifacts = getattr(task, "artifacts", None)
    return dict(artifacts()) if artifacts is not None else {}
