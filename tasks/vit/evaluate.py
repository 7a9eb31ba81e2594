"""python -m tasks.vit.evaluate --checkpoint RUN_DIR_OR_FILE [--key.sub=value ...]

Test-set top-1/top-5 of a trained ViT, a confusion-matrix PNG and an attention-rollout PNG of a
few test images. The recipe comes from the checkpoint; dotted overrides change it (for example
`--data.data_dir=...` on another machine).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from tasks.vit.config import ViTConfig
from tasks.vit.figures import attention_rollout, confusion_matrix, plot_confusion_matrix, plot_rollout
from tasks.vit.model import ViT, build_model
from tasks.vit.task import ViTTask, classification_metrics, predict
from zoo.cli import main_guard
from zoo.config import ConfigError, UserError, from_yaml
from zoo.train.checkpoint import load_checkpoint, step_checkpoints


def find_checkpoint(path: Path) -> Path:
    """A checkpoint file, or the newest step checkpoint of a run directory."""
    if path.is_file():
        return path
    found = step_checkpoints(path / "checkpoints") if (path / "checkpoints").is_dir() else []
    if not found:
        raise UserError(f"{path}: neither a checkpoint file nor a run directory with checkpoints")
    return found[-1]


def load_run(path: Path, overrides: list[str]) -> tuple[ViTConfig, ViT]:
    """The recipe (with overrides) and the model of a checkpoint; EMA weights when it has them."""
    state = load_checkpoint(path)
    cfg = from_yaml(ViTConfig, state["config"])
    if overrides:
        try:
            merged = OmegaConf.merge(OmegaConf.structured(cfg), OmegaConf.from_dotlist(
                [o.removeprefix("--") for o in overrides]))
            cfg = OmegaConf.to_object(merged)
        except OmegaConfBaseException as err:
            raise ConfigError(f"bad override: {str(err).splitlines()[0]}") from None
    # The pixel statistics are buffers: the checkpoint's values replace these placeholders.
    model = build_model(cfg.model, mean=(0.0,), std=(1.0,))
    if "ema" in state:  # AveragedModel's keys: "module." + the model's, plus a counter
        weights = {k.removeprefix("module."): v for k, v in state["ema"].items()
                   if k.startswith("module.")}
    else:
        weights = state["model"]
    model.load_state_dict(weights)
    return cfg, model.eval()


@main_guard
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, type=Path,
                        help="a checkpoint file or a run directory (its newest checkpoint)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for metrics.json and the PNGs (default: RUN_DIR/figures)")
    parser.add_argument("--images", type=int, default=8, help="test images in the rollout figure")
    args, overrides = parser.parse_known_args(argv)
    path = find_checkpoint(args.checkpoint)
    cfg, model = load_run(path, overrides)
    out = args.out or path.parent.parent / "figures"
    out.mkdir(parents=True, exist_ok=True)
    task = ViTTask(cfg)

    logits, labels = predict(model, task.test_loader())
    metrics = classification_metrics(logits, labels)
    (out / "metrics.json").write_text(json.dumps({"checkpoint": str(path), **metrics}, indent=2) + "\n")
    classes = task.data.classes
    matrix = confusion_matrix(labels, logits.argmax(dim=-1), len(classes))
    plot_confusion_matrix(matrix, classes, out / "confusion_matrix.png",
                          title=f"{cfg.data.dataset} test: top-1 {metrics['top1']:.2f}%")

    count = min(args.images, len(task.test_set))
    picks = torch.linspace(0, len(task.test_set) - 1, count).long().tolist()  # spread over classes
    images = torch.stack([task.test_set[i][0] for i in picks])
    maps = attention_rollout(model, images)
    titles = [f"{classes[labels[i]]} -> {classes[logits[i].argmax()]}" for i in picks]
    looker = "the class token looks" if model.pool == "token" else "the pooled tokens look"
    plot_rollout(images, maps, titles, out / "attention_rollout.png",
                 title=f"attention rollout: where {looker} (true -> predicted)")
    print(f"test top-1 {metrics['top1']:.2f}%  top-5 {metrics['top5']:.2f}%  loss "
          f"{metrics['loss']:.4f}  ({len(labels)} images, {path})")
    print(f"wrote {out / 'metrics.json'}, {out / 'confusion_matrix.png'}, "
          f"{out / 'attention_rollout.png'}")


if __name__ == "__main__":
    main()
