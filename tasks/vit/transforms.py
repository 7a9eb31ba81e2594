"""Image augmentation (torchvision transforms v2) made a pure function of (seed, epoch, index).

torchvision's random transforms draw from torch's global generator. Each example is transformed
under it seeded from (seed, epoch, index), and each batch mixed under it seeded from (seed,
epoch, global batch index), by zoo.data.seeding, so the augmented data does not depend on worker
count, order of loading, or the training RNG: a resumed run sees exactly what an uninterrupted
one would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor
from torch.utils.data import Dataset
from torchvision.transforms import v2

from tasks.vit.config import DataConfig
from zoo.data.seeding import example_seed, seeded

# Centre crop fraction for evaluation at ImageNet-like sizes (timm's default crop_pct).
CROP_FRACTION = 0.875
# zoo.data.seeding streams (the epoch's order is stream 0): an image's augmentation, a batch's mix.
AUGMENT, MIX = 1, 2


def train_transform(cfg: DataConfig, image_size: int) -> v2.Compose:
    """PIL image or uint8 (C, H, W) tensor -> augmented float (C, S, S) in [0, 1]."""
    steps: list[Any] = [v2.ToImage()]
    if cfg.crop_scale:
        steps.append(v2.RandomResizedCrop(image_size, scale=tuple(cfg.crop_scale), antialias=True))
    else:
        steps.append(v2.Resize((image_size, image_size), antialias=True))
    if cfg.hflip > 0:
        steps.append(v2.RandomHorizontalFlip(cfg.hflip))
    if cfg.randaugment_ops > 0:
        steps.append(v2.RandAugment(num_ops=cfg.randaugment_ops, magnitude=cfg.randaugment_magnitude))
    steps.append(v2.ToDtype(torch.float32, scale=True))
    if cfg.random_erasing > 0:
        steps.append(v2.RandomErasing(cfg.random_erasing))
    return v2.Compose(steps)


def eval_transform(image_size: int, source_size: int | None) -> v2.Compose:
    """Deterministic resize (and centre crop for large images) to float (C, S, S) in [0, 1].

    Args:
        source_size: the data set's fixed image side, or None when sizes vary (ImageFolder):
            then resize the short side to S / 0.875 and centre-crop S, as timm evaluates.
    """
    steps: list[Any] = [v2.ToImage()]
    if source_size is None:
        steps += [v2.Resize(round(image_size / CROP_FRACTION), antialias=True), v2.CenterCrop(image_size)]
    elif source_size != image_size:
        steps.append(v2.Resize((image_size, image_size), antialias=True))
    steps.append(v2.ToDtype(torch.float32, scale=True))
    return v2.Compose(steps)


class SeededTransform(Dataset):
    """`dataset[i]` = (transform(image), label), with the transform's randomness seeded by
    (seed, epoch, i). Call `set_epoch` before building each epoch's loader."""

    def __init__(self, dataset: Dataset, transform: Callable[[Any], Tensor], seed: int) -> None:
        self.dataset, self.transform, self.seed, self.epoch = dataset, transform, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        image, label = self.dataset[index]
        with seeded(example_seed(self.seed, self.epoch, index, stream=AUGMENT)):
            return self.transform(image), int(label)


class BatchMixer:
    """Mixup and/or CutMix on a batch: (images, labels) -> (images, soft targets (B, K)).

    With both enabled, each mixed batch picks one at random (timm's switch). A batch is mixed
    with probability `prob`; unmixed batches get one-hot targets, so the loss sees one format.
    """

    def __init__(self, num_classes: int, *, mixup_alpha: float, cutmix_alpha: float, prob: float) -> None:
        self.num_classes, self.prob = num_classes, prob
        mixers = []
        if mixup_alpha > 0:
            mixers.append(v2.MixUp(alpha=mixup_alpha, num_classes=num_classes))
        if cutmix_alpha > 0:
            mixers.append(v2.CutMix(alpha=cutmix_alpha, num_classes=num_classes))
        self.mix = v2.RandomChoice(mixers) if mixers else None

    def __call__(self, images: Tensor, labels: Tensor, seed: int) -> tuple[Tensor, Tensor]:
        """Mix a batch under `seed` (zoo.data.seeding.example_seed of the batch, stream MIX)."""
        with seeded(seed):
            if self.mix is not None and torch.rand(()).item() < self.prob:
                return self.mix(images, labels)
        return images, torch.nn.functional.one_hot(labels, self.num_classes).float()
