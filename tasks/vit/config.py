"""The ViT recipe schema: the runner's sections plus `model` and `data`.

The defaults are the embedded digits recipe (configs/vit/digits.yaml says the same), so
`python -m tasks.vit.train` works with no file at all, installed or from a checkout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zoo.config import Invalid
from zoo.models.checks import check_model_values
from zoo.train.config import OptimConfig, RunConfig, ScheduleConfig, TrainConfig


@dataclass
class ModelConfig:
    image_size: int = field(default=8, metadata={"help": "input side in pixels (square images)"})
    patch_size: int = field(default=2, metadata={"help": "patch side; must divide image_size"})
    in_chans: int = field(default=1, metadata={"help": "image channels (1 grey, 3 RGB)"})
    num_classes: int = field(default=10, metadata={"help": "classes of the head"})
    dim: int = field(default=64, metadata={"help": "model width D"})
    encoder_layers: int = field(default=4, metadata={"help": "encoder layers (timm's depth)"})
    num_heads: int = field(default=4, metadata={"help": "attention heads; must divide dim"})
    ffn_dim: int = field(default=128, metadata={"help": "FFN hidden width (timm: mlp_ratio * dim)"})
    pool: str = field(default="avg", metadata={"help": "token (class token) | avg (mean of patch tokens)"})
    class_token: bool = field(default=True, metadata={"help": "prepend a class token (needed by pool=token)"})
    bias: bool = field(default=True, metadata={"help": "biases in the encoder's linear layers"})
    dropout: float = field(
        default=0.0, metadata={"help": "dropout on embeddings, residual branches and before the head"}
    )
    attn_dropout: float = field(default=0.0, metadata={"help": "dropout on attention weights"})
    drop_path_rate: float = field(
        default=0.0, metadata={"help": "stochastic depth: rate of the last layer (rises linearly from 0)"}
    )
    pretrained: str = field(
        default="",
        metadata={"help": "'' | a timm model name (downloads) | a timm checkpoint file (.safetensors/.pth)"},
    )
    new_head: bool = field(
        default=False,
        metadata={
            "help": "fine-tuning: keep a fresh head instead of the pretrained one "
            "(needed when num_classes differs)"
        },
    )

    def check(self) -> None:
        check_model_values(self)
        if self.image_size % self.patch_size:
            raise Invalid("patch_size", f"{self.patch_size} does not divide image_size {self.image_size}")
        if self.pool not in ("token", "avg"):
            raise Invalid("pool", f"must be token or avg, not {self.pool!r}")
        if self.pool == "token" and not self.class_token:
            raise Invalid("pool", "token pooling needs model.class_token=true")


@dataclass
class DataConfig:
    dataset: str = field(
        default="digits",
        metadata={"help": "digits | cifar10 | cifar100 | mnist | fashion_mnist | imagefolder"},
    )
    data_dir: str = field(
        default="",
        metadata={
            "resume": "may change",
            "help": "data directory ('' = $ZOO_DATA_DIR); cifar10 reads <dir>/cifar10/{train,test} "
            "(ImageFolder)",
        },
    )
    path: str = field(
        default="",
        metadata={"resume": "may change", "help": "imagefolder: root holding train/ and val/ (or test/)"},
    )
    download: bool = field(
        default=True,
        metadata={"resume": "may change", "help": "let torchvision download CIFAR/MNIST when absent"},
    )
    batch_size: int = field(default=64, metadata={"help": "training images per micro-batch"})
    eval_batch_size: int = field(
        default=256, metadata={"resume": "may change", "help": "images per evaluation batch"}
    )
    eval_limit: int = field(
        default=0,
        metadata={
            "resume": "may change",
            "help": "evaluate on this many test images, evenly spaced (0 = all; for quick checks)",
        },
    )
    num_workers: int = field(
        default=0, metadata={"resume": "may change", "help": "DataLoader worker processes"}
    )
    mean: list[float] = field(
        default_factory=list,
        metadata={"help": "per-channel normalisation mean ([] = the dataset's); stored in the model"},
    )
    std: list[float] = field(
        default_factory=list,
        metadata={"help": "per-channel normalisation std ([] = the dataset's); stored in the model"},
    )
    crop_scale: list[float] = field(
        default_factory=lambda: [0.85, 1.0],
        metadata={"help": "random resized crop area range ([] = no crop)"},
    )
    hflip: float = field(default=0.0, metadata={"help": "probability of a horizontal flip (0 for digits)"})
    randaugment_ops: int = field(default=0, metadata={"help": "RandAugment operations per image (0 = off)"})
    randaugment_magnitude: int = field(default=9, metadata={"help": "RandAugment magnitude (0-30)"})
    random_erasing: float = field(default=0.0, metadata={"help": "probability of random erasing"})
    mixup_alpha: float = field(default=0.0, metadata={"help": "Mixup Beta(alpha, alpha) (0 = off)"})
    cutmix_alpha: float = field(default=0.0, metadata={"help": "CutMix Beta(alpha, alpha) (0 = off)"})
    mix_prob: float = field(
        default=1.0, metadata={"help": "probability that a batch is mixed (when mixup or cutmix is on)"}
    )
    label_smoothing: float = field(default=0.1, metadata={"help": "label smoothing of the training targets"})

    def check(self) -> None:
        """Values torchvision would reject (or index past) only once training has begun."""
        for key in ("batch_size", "eval_batch_size"):
            if getattr(self, key) < 1:
                raise Invalid(key, f"must be at least 1, not {getattr(self, key)}")
        for key in ("eval_limit", "num_workers", "randaugment_ops"):
            if getattr(self, key) < 0:
                raise Invalid(key, f"must be at least 0, not {getattr(self, key)}")
        if not all(value > 0 for value in self.std):
            raise Invalid("std", f"each value must be above 0, not {self.std}")
        if self.crop_scale and not (
            len(self.crop_scale) == 2 and 0 < self.crop_scale[0] <= self.crop_scale[1] <= 1
        ):
            raise Invalid(
                "crop_scale", f"must be [] or [low, high] with 0 < low <= high <= 1, not {self.crop_scale}"
            )
        if not 0 <= self.randaugment_magnitude <= 30:
            raise Invalid("randaugment_magnitude", f"must be in 0-30, not {self.randaugment_magnitude}")
        for key in ("hflip", "random_erasing", "mix_prob"):
            if not 0 <= getattr(self, key) <= 1:
                raise Invalid(key, f"is a probability: must be in [0, 1], not {getattr(self, key)}")
        for key in ("mixup_alpha", "cutmix_alpha"):
            if not getattr(self, key) >= 0:
                raise Invalid(key, f"must be at least 0 (0 = off), not {getattr(self, key)}")
        if not 0 <= self.label_smoothing < 1:
            raise Invalid("label_smoothing", f"must be in [0, 1), not {self.label_smoothing}")


def _digits_train() -> TrainConfig:
    # One thread: the matrices of this model are too small to gain from more, and extra
    # OpenMP threads slow it down badly when other processes share the cores.
    return TrainConfig(
        out_dir="runs/vit-digits", max_steps=1500, log_every=50, eval_every=500, best_metric="top1", threads=1
    )


def _digits_optim() -> OptimConfig:
    return OptimConfig(name="adamw", lr=2e-3, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.05)


def _digits_schedule() -> ScheduleConfig:
    return ScheduleConfig(name="cosine", warmup_steps=50, min_lr_ratio=0.01)


@dataclass
class ViTConfig(RunConfig):
    train: TrainConfig = field(default_factory=_digits_train)
    optim: OptimConfig = field(default_factory=_digits_optim)
    schedule: ScheduleConfig = field(default_factory=_digits_schedule)
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)

    def check(self) -> None:
        """The normalisation statistics against the model's channels (the data's must match them)."""
        channels = self.model.in_chans
        for key in ("mean", "std"):
            values = getattr(self.data, key)
            if len(values) not in (0, 1, channels):
                allowed = "0 or 1" if channels == 1 else f"0, 1 or {channels}"
                raise Invalid(
                    f"data.{key}",
                    f"needs {allowed} values (model.in_chans is {channels}), got {len(values)}: {values}",
                )
