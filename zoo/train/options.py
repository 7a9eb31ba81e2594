"""The options every CLI that runs a trained model shares, declared once: task verbs subclass
these dataclasses and add their own (the positional RUN fills `run`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from zoo.config import Invalid


@dataclass
class CheckpointOptions:
    """Which trained model: `zoo.train.load_trained(run, which=checkpoint)`."""

    run: str = field(default="", metadata={"help": "a run directory, or a checkpoint file (required)"})
    checkpoint: str = field(
        default="best",
        metadata={"help": "best | last | averaged (python -m zoo.train.average RUN) | a checkpoint file"},
    )


@dataclass
class InferenceOptions(CheckpointOptions):
    """Which trained model, and where and at what precision it runs."""

    device: str = field(default="cpu", metadata={"help": "cpu | cuda | cuda:N"})
    precision: str = field(default="", metadata={"help": "fp32 | bf16 ('' = as the run trained)"})

    def check(self) -> None:
        if self.precision not in ("", "fp32", "bf16"):
            raise Invalid("precision", f"must be fp32 or bf16, not {self.precision!r}")
        kind, _, index = self.device.partition(":")
        if kind not in ("cpu", "cuda") or (index and not (kind == "cuda" and index.isdigit())):
            raise Invalid("device", f"must be cpu, cuda or cuda:N, not {self.device!r}")
        if kind == "cuda" and not torch.cuda.is_available():
            raise Invalid("device", "cuda was asked for but no CUDA device is visible")
