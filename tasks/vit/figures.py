"""Figures for a trained classifier: the confusion matrix and attention rollout.

Attention rollout (Abnar & Zuidema, 2020) follows attention through the layers: each layer's
head-averaged weights, mixed half-and-half with the identity for the residual path and
renormalised, are multiplied from the first layer up. The class token's row of the product says
how much each patch flows into what the head reads.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import Tensor  # noqa: E402

from zoo.blocks import attention_maps  # noqa: E402
from zoo.models.vit import ViT  # noqa: E402


def confusion_matrix(labels: Tensor, predictions: Tensor, num_classes: int) -> Tensor:
    """(K, K) counts: row = true class, column = predicted class."""
    flat = labels.long() * num_classes + predictions.long()
    return torch.bincount(flat, minlength=num_classes**2).reshape(num_classes, num_classes)


@torch.no_grad()
def attention_rollout(model: ViT, images: Tensor) -> Tensor:
    """(B, gh, gw): how much each patch contributes to the pooled representation, rows summing
    to 1 over the patches.

    With pool="token" this is the class token's row of the rollout; with "avg", the mean of
    the patch tokens' rows.
    """
    with attention_maps(model.encoder) as maps:
        model(images)
    weights = [maps[f"layers.{i}.self_attn"][0] for i in range(len(model.encoder.layers))]
    n = weights[0].shape[-1]
    eye = torch.eye(n, device=images.device)
    rollout = eye.expand(images.shape[0], n, n)
    for w in weights:  # the last layer may have run for the class token's row only
        mixed = 0.5 * w.float().mean(dim=1) + 0.5 * eye[: w.shape[-2]]
        rollout = (mixed / mixed.sum(dim=-1, keepdim=True)) @ rollout
    p = model.num_prefix
    source = rollout[:, 0] if model.pool == "token" else rollout[:, p:].mean(dim=1)
    patches = source[:, p:]
    patches = patches / patches.sum(dim=-1, keepdim=True)
    grid = (images.shape[-2] // model.patch_size, images.shape[-1] // model.patch_size)
    return patches.reshape(-1, *grid)


def plot_confusion_matrix(matrix: Tensor, classes: list[str], path: Path, *, title: str) -> None:
    """A confusion matrix PNG (counts written in the cells when there are few classes)."""
    k = len(classes)
    size = max(4.0, 0.45 * k + 2)
    fig, ax = plt.subplots(figsize=(size, size))
    ax.imshow(matrix.numpy(), cmap="Blues")
    ticks = range(k)
    ax.set_xticks(ticks, classes if k <= 30 else [], rotation=90)
    ax.set_yticks(ticks, classes if k <= 30 else [])
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    if k <= 20:
        peak = matrix.max().item()
        for i in range(k):
            for j in range(k):
                value = matrix[i, j].item()
                ax.text(
                    j,
                    i,
                    str(value),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if value > peak / 2 else "black",
                )
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_rollout(images: Tensor, maps: Tensor, titles: list[str], path: Path, *, title: str) -> None:
    """Each image (top row) and its rollout map upsampled over it (bottom row)."""
    b = images.shape[0]
    fig, axes = plt.subplots(2, b, figsize=(1.8 * b, 3.8), squeeze=False)
    heat = F.interpolate(maps[:, None], size=images.shape[-2:], mode="bilinear", align_corners=False)[:, 0]
    for i in range(b):
        picture = images[i].permute(1, 2, 0).clamp(0, 1).numpy()
        cmap = "gray" if picture.shape[-1] == 1 else None
        for ax in axes[:, i]:
            ax.imshow(picture.squeeze(-1) if cmap else picture, cmap=cmap)
            ax.axis("off")
        axes[1, i].imshow(heat[i].numpy(), cmap="jet", alpha=0.5)
        axes[0, i].set_title(titles[i], fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
