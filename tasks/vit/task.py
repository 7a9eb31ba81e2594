"""Image classification as a runner Task: soft-target cross-entropy, top-1/top-5 evaluation."""

from __future__ import annotations

import json
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader, Subset

from tasks.vit.config import ModelConfig, ViTConfig
from tasks.vit.data import ImageData, build_datasets, iterate
from tasks.vit.transforms import MIX, BatchMixer, SeededTransform, eval_transform, train_transform
from zoo.config import UserError
from zoo.convert.timm_vit import load_pretrained
from zoo.data.batching import shard
from zoo.data.seeding import example_generator, example_seed
from zoo.models.vit import ViT
from zoo.train import RunContext, Term

# The class names (and the data set's native image side), kept inside every checkpoint.
CLASSES_ARTIFACT = "classes.json"


def build_model(cfg: ModelConfig, *, mean: tuple[float, ...], std: tuple[float, ...]) -> ViT:
    """The ViT a config describes; `mean`/`std` come from the data (they live in the model)."""
    return ViT(
        image_size=cfg.image_size,
        patch_size=cfg.patch_size,
        in_chans=cfg.in_chans,
        num_classes=cfg.num_classes,
        dim=cfg.dim,
        encoder_layers=cfg.encoder_layers,
        num_heads=cfg.num_heads,
        ffn_dim=cfg.ffn_dim,
        pool=cfg.pool,
        class_token=cfg.class_token,
        bias=cfg.bias,
        dropout=cfg.dropout,
        attn_dropout=cfg.attn_dropout,
        drop_path_rate=cfg.drop_path_rate,
        mean=mean,
        std=std,
    )


def num_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def soft_target_cross_entropy(logits: Tensor, targets: Tensor, *, smoothing: float = 0.0) -> Tensor:
    """Cross-entropy summed over the batch against soft targets (B, K) (Mixup/CutMix output
    or one-hot), smoothed towards uniform by `smoothing`."""
    targets = targets * (1.0 - smoothing) + smoothing / targets.shape[-1]
    return -(targets * F.log_softmax(logits.float(), dim=-1)).sum()


def topk_correct(logits: Tensor, labels: Tensor, k: int) -> Tensor:
    """How many labels are among the k highest logits."""
    k = min(k, logits.shape[-1])
    return (logits.topk(k, dim=-1).indices == labels[:, None]).any(dim=-1).sum()


def predict(model: nn.Module, loader: DataLoader) -> tuple[Tensor, Tensor]:
    """Logits (N, K) in float32 and labels (N,) over a loader, on the CPU (run it under
    zoo.train.evaluation)."""
    device = next(model.parameters()).device
    logits, labels = [], []
    for images, batch_labels in iterate(loader):
        logits.append(model(images.to(device)).float().cpu())
        labels.append(batch_labels)
    return torch.cat(logits), torch.cat(labels)


def classification_metrics(logits: Tensor, labels: Tensor) -> dict[str, float]:
    """top1 and top5 accuracy in percent and the mean cross-entropy."""
    n = len(labels)
    return {
        "top1": 100.0 * topk_correct(logits, labels, 1).item() / n,
        "top5": 100.0 * topk_correct(logits, labels, 5).item() / n,
        "loss": F.cross_entropy(logits, labels).item(),
    }


class ViTTask:
    """The runner's Task for image classification with a ViT.

    Args:
        cfg: the full recipe.
        data: the data set, when the caller already has it (tests); built from cfg.data in
            `setup` if None.
    """

    unit_name = "images"

    def __init__(self, cfg: ViTConfig, data: ImageData | None = None) -> None:
        self.cfg = cfg
        self.data = data

    def setup(self, run: RunContext) -> None:
        """Build (rank 0 first: torchvision may download) and wrap the data sets."""
        self.run = run
        mc, dc, seed = self.cfg.model, self.cfg.data, self.cfg.train.seed
        if self.data is None:
            with run.main_process_first():
                self.data = build_datasets(dc, channels=mc.in_chans, num_classes=mc.num_classes)
        if dc.batch_size > len(self.data.train):
            raise UserError(
                f"key 'data.batch_size': {dc.batch_size} exceeds the {len(self.data.train)} training images"
            )
        test = self.data.test
        if 0 < dc.eval_limit < len(test):  # evenly spaced: class-sorted folders stay balanced
            test = Subset(test, torch.linspace(0, len(test) - 1, dc.eval_limit).long().tolist())
        self.train_set = SeededTransform(self.data.train, train_transform(dc, mc.image_size), seed)
        self.test_set = SeededTransform(test, eval_transform(mc.image_size, self.data.image_size), seed)
        self.mixer = BatchMixer(
            mc.num_classes, mixup_alpha=dc.mixup_alpha, cutmix_alpha=dc.cutmix_alpha, prob=dc.mix_prob
        )

    def artifacts(self) -> dict[str, bytes]:
        """The class names travel inside every checkpoint: a run directory classifies alone."""
        record = {"classes": list(self.data.classes), "image_size": self.data.image_size}
        return {CLASSES_ARTIFACT: json.dumps(record).encode()}

    def build_model(self) -> ViT:
        model = build_model(self.cfg.model, mean=self.data.mean, std=self.data.std)
        mc = self.cfg.model
        if mc.pretrained:
            fresh = load_pretrained(model, mc.pretrained, new_head=mc.new_head)
            if fresh:
                print(f"pretrained {mc.pretrained}: new {', '.join(fresh)} (model.new_head)")
        return model

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[tuple[Tensor, Tensor]]:
        """This rank's shuffled full batches of augmented images with soft targets (B, K)."""
        rank, world_size = self.run.rank, self.run.world_size
        seed, size = self.cfg.train.seed, self.cfg.data.batch_size
        order = torch.randperm(len(self.train_set), generator=example_generator(seed, epoch))
        batches = order[: len(order) // size * size].view(-1, size).tolist()
        self.train_set.set_epoch(epoch)
        loader = DataLoader(
            self.train_set,
            batch_sampler=shard(batches, rank, world_size)[start:],
            num_workers=self.cfg.data.num_workers,
        )
        for index, (images, labels) in enumerate(iterate(loader), start=start):
            # The batch's global index (batches are dealt to ranks in turn, see shard).
            yield self.mixer(images, labels, example_seed(seed, epoch, index * world_size + rank, stream=MIX))

    def units(self, batch: tuple[Tensor, Tensor]) -> dict[str, int]:
        return {"loss": len(batch[0])}

    def train_step(self, model: nn.Module, batch: tuple[Tensor, Tensor]) -> dict[str, Term]:
        images, targets = batch
        logits = model(images)
        loss = soft_target_cross_entropy(logits, targets, smoothing=self.cfg.data.label_smoothing)
        # With mixed targets, "correct" means the prediction is the dominant class.
        correct = topk_correct(logits.detach(), targets.argmax(dim=-1), 1)
        return {"loss": Term(loss, {"top1": 100.0 * correct})}

    def test_loader(self) -> DataLoader:
        return DataLoader(
            self.test_set, batch_size=self.cfg.data.eval_batch_size, num_workers=self.cfg.data.num_workers
        )

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        return classification_metrics(*predict(model, self.test_loader()))
