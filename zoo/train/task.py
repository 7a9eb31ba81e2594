"""The protocol between the runner and a task. The runner knows this and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol

from torch import Tensor, nn


@dataclass
class StepOutput:
    """What a task returns for one micro-batch.

    loss: the loss *summed* over the batch's units (tokens, images, ...), a scalar tensor.
    units: how many units `loss` sums over. The runner divides the gradient by the total units
        of all micro-batches of a step on all ranks, so accumulation and DDP give exactly the
        gradient of one big batch, whatever the padding.
    metrics: extra sums over the same units (e.g. correct tokens); logged as per-unit averages.
    """

    loss: Tensor
    units: int | Tensor
    metrics: dict[str, float | Tensor] = field(default_factory=dict)


class Task(Protocol):
    def build_model(self) -> nn.Module:
        """The model, freshly initialised from the task's config and seed."""

    def train_batches(self, epoch: int, *, start: int = 0, rank: int = 0,
                      world_size: int = 1) -> Iterable[Any]:
        """This rank's batches of `epoch`, skipping its first `start` (for exact resume).

        Must be a deterministic function of (config seed, epoch), and every rank must yield the
        same number of batches (see zoo.data.batching.shard).
        """

    def train_step(self, model: nn.Module, batch: Any) -> StepOutput:
        """Forward one micro-batch (already on the device) and return the summed loss."""

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Validation metrics; called in eval mode under torch.no_grad()."""
