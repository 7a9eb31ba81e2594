"""zoo ViT vs timm's VisionTransformer: the same architecture and weights, one interleaved run.

    python -m bench.vit_speed [--device cuda] [--preset small|vit_small] [--repeats 7] [--compile]

Training images/s (forward, cross-entropy, backward, AdamW step, each library's AdamW as its
training script builds it), the same without the optimizer step (`fwd+bwd`: the models alone),
and inference images/s, in fp32 and under bf16 autocast. Ratios are ours / timm (>= 1.0 means
zoo is at least as fast); the target is >= 1.2x for training. `--compile` adds training rows with
both models under
torch.compile (the runner's train.compile), in the same round robin. Writes
bench/results/vit_speed.{json,md}.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from timm.models.vision_transformer import VisionTransformer
from torch import nn

from bench.optimizers import timm_optimizer, zoo_optimizer
from bench.output import publish
from bench.tables import SHIM_TABLES
from bench.timing import interleaved_medians, peer_arguments, run_meta, synced
from zoo.convert.timm_vit import vit_from_timm

PRESETS = {
    "small": dict(img_size=32, patch_size=4, embed_dim=192, depth=6, num_heads=3, batch=64),
    "vit_small": dict(img_size=224, patch_size=16, embed_dim=384, depth=12, num_heads=6, batch=64),
    "vit_base": dict(img_size=224, patch_size=16, embed_dim=768, depth=12, num_heads=12, batch=128),
}


# Each library's AdamW as its training script builds it (bench/optimizers.py), with the ViT
# recipes' weight decay: zoo's runner takes torch's fused kernel, timm's train.py torch's default.
OPTIMIZERS = {
    "zoo": lambda model: zoo_optimizer(model, "adamw", 1e-4, weight_decay=0.05),
    "timm": lambda model: timm_optimizer(model, 1e-4, weight_decay=0.05),
}


def _train_step(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    optimizer: torch.optim.Optimizer | None,
    autocast: bool,
) -> Callable[[], None]:
    """Forward, loss, backward and (given an optimizer) its step; without one the gradients are
    dropped instead: the model's own share of a step."""

    def step() -> None:
        with torch.autocast(images.device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        else:
            model.zero_grad(set_to_none=True)

    return step


def _infer_step(model: nn.Module, images: torch.Tensor, autocast: bool) -> Callable[[], None]:
    @torch.inference_mode()
    def step() -> None:
        with torch.autocast(images.device.type, dtype=torch.bfloat16, enabled=autocast):
            model(images)

    return step


def contenders(
    preset: str,
    device: torch.device,
    compiled: bool,
    *,
    batch: int | None = None,
    compile_peer: bool = True,
    precisions: tuple[str, ...] = ("fp32", "bf16"),
) -> tuple[dict[str, Callable[[], None]], dict]:
    """The timed callables, named MODE/PRECISION/LIBRARY (each synchronises a GPU), and the
    setup; `compiled` adds zoo's (and with `compile_peer` timm's) training step compiled."""
    spec = dict(PRESETS[preset])
    default_batch = spec.pop("batch")
    batch = batch or default_batch
    torch.manual_seed(0)
    theirs = VisionTransformer(num_classes=10, **spec)
    # timm normalises outside the model; our model divides by its stored std: set 0/1 so the
    # two compute the same function on the same input.
    theirs.pretrained_cfg = {"mean": (0.0,), "std": (1.0,)}
    ours = vit_from_timm(theirs)
    models = {"zoo": ours.to(device), "timm": theirs.to(device)}
    images = torch.rand(batch, 3, spec["img_size"], spec["img_size"], device=device)
    labels = torch.randint(0, 10, (batch,), device=device)
    fns = {}
    for precision in precisions:
        autocast = precision == "bf16"
        for name, model in models.items():
            fns[f"train/{precision}/{name}"] = synced(
                _train_step(model, images, labels, OPTIMIZERS[name](model), autocast), device
            )
            fns[f"fwd+bwd/{precision}/{name}"] = synced(
                _train_step(model, images, labels, None, autocast), device
            )
            fns[f"infer/{precision}/{name}"] = synced(_infer_step(model, images, autocast), device)
            if compiled and (compile_peer or name == "zoo"):
                fns[f"train+compile/{precision}/{name}"] = synced(
                    _train_step(torch.compile(model), images, labels, OPTIMIZERS[name](model), autocast),
                    device,
                )
    params = sum(p.numel() for p in ours.parameters())
    return fns, {"preset": preset, **spec, "batch": batch, "parameters": params}


def run(preset: str, device: torch.device, repeats: int, compiled: bool) -> tuple[list[dict], dict]:
    fns, setup = contenders(preset, device, compiled)
    batch = setup["batch"]
    times = {}
    for precision in ("fp32", "bf16"):
        # One interleaved round robin per precision: load from other processes hits all alike,
        # and no step runs amid steps of the other precision (as no training run does).
        times.update(
            interleaved_medians(
                {k: f for k, f in fns.items() if f"/{precision}/" in k}, repeats=repeats, warmup=2
            )
        )
    rows = []
    for kind in ("train", "fwd+bwd", "infer") + (("train+compile",) if compiled else ()):
        for precision in ("fp32", "bf16"):
            zoo_s, timm_s = times[f"{kind}/{precision}/zoo"], times[f"{kind}/{precision}/timm"]
            rows.append(
                {
                    "mode": kind,
                    "precision": precision,
                    "zoo_images_per_s": batch / zoo_s,
                    "timm_images_per_s": batch / timm_s,
                    "ratio": timm_s / zoo_s,
                }
            )
    return rows, setup


def main() -> None:
    args = peer_arguments(__doc__, PRESETS, "small", compile_option=True)
    import timm

    rows, setup = run(args.preset, torch.device(args.device), args.repeats, args.compile)
    record = {**run_meta("bench.vit_speed", "timm", timm.__version__, setup), "rows": rows}
    publish(record, args.out, "vit_speed", page(record, args.repeats))


def page(record: dict, repeats: int) -> list[str]:
    """vit_speed.md: the run, then its table as the docs show it (bench.tables)."""
    return [
        "# zoo ViT vs timm VisionTransformer (same architecture and weights)",
        "",
        f"`{record['command']}` on {record['hardware']}, torch {record['torch']}, timm {record['timm']}.",
        f"Setup: {record['setup']}. Medians of {repeats} interleaved rounds.",
        "",
        *SHIM_TABLES["vit_speed"].render_file(record, "vit_speed.json"),
    ]


if __name__ == "__main__":
    main()
