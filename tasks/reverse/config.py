from __future__ import annotations

from dataclasses import dataclass, field

from zoo.config import Invalid
from zoo.models import ModelConfig
from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig


@dataclass
class ReverseDataConfig:
    num_symbols: int = field(default=10, metadata={"help": "distinct symbols in the sequences"})
    min_len: int = field(default=3, metadata={"help": "shortest sequence"})
    max_len: int = field(default=10, metadata={"help": "longest sequence"})
    batch_size: int = field(default=64, metadata={"help": "sequences per global batch (all ranks)"})
    batches_per_epoch: int = field(default=100, metadata={"help": "batches in one epoch"})
    valid_size: int = field(
        default=512, metadata={"resume": "may change", "help": "held-out sequences for evaluation"}
    )


def _tiny_model() -> ModelConfig:
    return ModelConfig(
        encoder_layers=2, decoder_layers=2, dim=64, ffn_dim=128, num_heads=4, dropout=0.0, max_len=64
    )


@dataclass
class ReverseConfig(RunConfig):
    model: ModelConfig = field(default_factory=_tiny_model)
    data: ReverseDataConfig = field(default_factory=ReverseDataConfig)
    label_smoothing: float = field(default=0.0, metadata={"help": "eps_ls of the cross-entropy"})
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            out_dir="runs/reverse", max_steps=400, log_every=50, eval_every=200, best_metric="token_acc"
        )
    )
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=2e-3))
    schedule: ScheduleConfig = field(default_factory=lambda: ScheduleConfig(name="cosine", warmup_steps=50))

    def check(self) -> None:
        d = self.data
        for key in ("num_symbols", "min_len", "batch_size", "batches_per_epoch", "valid_size"):
            if getattr(d, key) < 1:
                raise Invalid(f"data.{key}", f"must be at least 1, not {getattr(d, key)}")
        if d.min_len > d.max_len:
            raise Invalid("data.min_len", f"{d.min_len} exceeds data.max_len {d.max_len}")
        # A sequence takes one more position than its length (EOS on the source, BOS on the target).
        if d.max_len >= self.model.max_len:
            raise Invalid(
                "data.max_len", f"{d.max_len} + 1 positions do not fit model.max_len {self.model.max_len}"
            )
