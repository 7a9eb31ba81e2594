"""The runner's part of every recipe: `train`, `optim` and `schedule` sections.

Task configs subclass RunConfig and add their own `model` and `data` sections.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zoo.config import Invalid

OPTIMIZERS = ("adam", "adamw", "sgd")  # zoo.train.optim.build_optimizer's
TRAIN_CHOICES = {"precision": ("fp32", "bf16"), "nan_policy": ("stop", "skip"), "best_mode": ("max", "min")}
TRAIN_LEAST = {
    "grad_accum": 1, "log_every": 1, "max_steps": 1, "eval_every": 0, "save_every": 0, "keep_last": 1,
    "nan_max_skips": 1, "threads": 0,
}  # fmt: skip


@dataclass
class TrainConfig:
    out_dir: str = field(
        default="runs/default", metadata={"help": "run directory (config, checkpoints, metrics)"}
    )
    seed: int = field(default=0, metadata={"help": "seed for parameters, data order and dropout"})
    device: str = field(default="auto", metadata={"help": "auto | cpu | cuda"})
    precision: str = field(default="fp32", metadata={"help": "fp32 | bf16 (autocast on CPU and GPU)"})
    compile: bool = field(default=False, metadata={"help": "torch.compile the model"})
    fsdp: bool = field(
        default=False,
        metadata={
            "help": "under torchrun, shard parameters, gradients and optimizer state over the ranks "
            "(FSDP2, each block its own unit) instead of DDP; a no-op for one process; not with "
            "train.ema_decay"
        },
    )
    threads: int = field(default=0, metadata={"help": "CPU threads for torch (0 = the cores idle at start)"})
    max_steps: int = field(default=1000, metadata={"help": "optimizer steps to train"})
    grad_accum: int = field(default=1, metadata={"help": "micro-batches per optimizer step"})
    clip_norm: float = field(default=0.0, metadata={"help": "max gradient norm (0 = no clipping)"})
    log_every: int = field(default=10, metadata={"help": "steps between metric log lines"})
    eval_every: int = field(default=0, metadata={"help": "steps between evaluations (0 = only at the end)"})
    save_every: int = field(default=0, metadata={"help": "steps between checkpoints (0 = only at the end)"})
    keep_last: int = field(default=3, metadata={"help": "checkpoints to keep besides the best"})
    best_metric: str = field(
        default="", metadata={"help": "evaluation metric that picks best.pt ('' = none)"}
    )
    best_mode: str = field(default="max", metadata={"help": "max | min: which way best_metric improves"})
    resume: bool = field(
        default=True,
        metadata={
            "help": "continue the run in out_dir from its newest valid checkpoint (false: move the "
            "old run aside into out_dir/replaced-TIME/ and start over)"
        },
    )
    nan_policy: str = field(
        default="stop", metadata={"help": "stop | skip a step whose loss or gradient norm is NaN/inf"}
    )
    nan_max_skips: int = field(
        default=10, metadata={"help": "skip policy: stop after this many non-finite steps in a row"}
    )
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    tensorboard: bool = field(default=True, metadata={"help": "also write TensorBoard event files"})
    ema_decay: float = field(
        default=0.0,
        metadata={"help": "keep an EMA of the weights with this decay (0 = off); evaluation uses it"},
    )
    init_from: str = field(
        default="",
        metadata={
            "help": "start a new run from the model weights of this checkpoint file or run directory "
            "(its last step); optimizer, schedule and data order start afresh; ignored when resuming"
        },
    )

    def check(self) -> None:
        """Values the loop cannot run with, or torch would reject deep in the set-up, or take
        silently and misbehave with."""
        for key, allowed in TRAIN_CHOICES.items():
            if getattr(self, key) not in allowed:
                raise Invalid(key, f"must be {' or '.join(allowed)}, not {getattr(self, key)!r}")
        for key, least in TRAIN_LEAST.items():
            if getattr(self, key) < least:
                raise Invalid(key, f"must be at least {least}, not {getattr(self, key)}")
        if not self.clip_norm >= 0:
            raise Invalid("clip_norm", f"must be at least 0 (0 = no clipping), not {self.clip_norm}")
        if not 0 <= self.ema_decay < 1:
            raise Invalid("ema_decay", f"must be in [0, 1) (0 = off), not {self.ema_decay}")


@dataclass
class OptimConfig:
    name: str = field(default="adam", metadata={"help": "adam | adamw | sgd"})
    lr: float = field(default=1e-3, metadata={"help": "peak learning rate"})
    betas: list[float] = field(default_factory=lambda: [0.9, 0.98], metadata={"help": "Adam betas"})
    eps: float = field(default=1e-9, metadata={"help": "Adam epsilon"})
    weight_decay: float = field(
        default=0.0,
        metadata={
            "help": "decoupled (adamw) or L2 weight decay; never on norms, biases or no_weight_decay() names"
        },
    )
    momentum: float = field(default=0.9, metadata={"help": "SGD momentum"})

    def check(self) -> None:
        if self.name not in OPTIMIZERS:
            raise Invalid("name", f"unknown optimizer {self.name!r}; choose {', '.join(OPTIMIZERS)}")
        if not self.lr >= 0:  # 0 is torch's too: weights held still (tests/zoo/train/test_runner.py)
            raise Invalid("lr", f"must be at least 0, not {self.lr}")
        if not self.eps > 0:
            raise Invalid("eps", f"must be above 0, not {self.eps}")
        if self.name in ("adam", "adamw") and len(self.betas) != 2:
            raise Invalid("betas", f"needs two values, got {self.betas}")
        if not all(0 <= beta < 1 for beta in self.betas):
            raise Invalid("betas", f"each must be in [0, 1), not {self.betas}")
        if not self.weight_decay >= 0:
            raise Invalid("weight_decay", f"must be at least 0, not {self.weight_decay}")
        if not 0 <= self.momentum < 1:
            raise Invalid("momentum", f"must be in [0, 1), not {self.momentum}")


@dataclass
class ScheduleConfig:
    name: str = field(
        default="inverse_sqrt",
        metadata={
            "help": "inverse_sqrt (the paper) | cosine | linear (BERT: warm-up, then linear decay "
            "to 0) | constant"
        },
    )
    warmup_steps: int = field(default=4000, metadata={"help": "linear warm-up steps"})
    min_lr_ratio: float = field(default=0.0, metadata={"help": "cosine: final lr as a fraction of the peak"})
    cooldown_steps: int = field(
        default=0,
        metadata={
            "help": "the last N steps before train.max_steps scale any schedule's rate down linearly to 0 "
            "(WSD's cooldown): a run extended by resuming can still end annealed"
        },
    )

    def check(self) -> None:
        from zoo.train.schedules import SCHEDULES  # the builders' registry (it imports this module)

        if self.name not in SCHEDULES:
            raise Invalid("name", f"unknown schedule {self.name!r}; choose {', '.join(SCHEDULES)}")
        for key in ("warmup_steps", "cooldown_steps"):
            if getattr(self, key) < 0:
                raise Invalid(key, f"must be at least 0, not {getattr(self, key)}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise Invalid("min_lr_ratio", f"must be in [0, 1], not {self.min_lr_ratio}")


@dataclass
class RunConfig:
    train: TrainConfig = field(default_factory=TrainConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
