"""python -m tasks.vit.evaluate RUN_DIR_OR_FILE [--checkpoint=best|last|averaged|FILE] [--key=value ...]

Test-set top-1/top-5 of a trained ViT, a confusion-matrix PNG and an attention-rollout PNG of a
few test images. The recipe and the weights (EMA weights when the run kept them) come from the
checkpoint, through zoo.train.load_trained like every evaluation CLI; the data options below
change where and how much it reads (for example `--data_dir=...` on another machine).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from zoo.train.options import CheckpointOptions

from tasks.vit.config import ViTConfig
from tasks.vit.figures import attention_rollout, confusion_matrix, plot_confusion_matrix, plot_rollout
from tasks.vit.task import ViTTask, build_model, classification_metrics, predict
from zoo.cli import main_guard
from zoo.config import Invalid, UserError, parse_cli
from zoo.train import RunContext, evaluation, load_trained


@dataclass
class EvaluateConfig(CheckpointOptions):
    out: str = field(
        default="", metadata={"help": "folder for metrics.json and the PNGs ('' = RUN_DIR/figures)"}
    )
    images: int = field(default=8, metadata={"help": "test images in the rollout figure"})
    data_dir: str = field(default="", metadata={"help": "data directory ('' = as trained)"})
    path: str = field(
        default="", metadata={"help": "imagefolder: the root holding train/ and val/ ('' = as trained)"}
    )
    eval_limit: int = field(
        default=-1, metadata={"help": "evaluate on this many test images (0 = all, -1 = as trained)"}
    )
    eval_batch_size: int = field(default=0, metadata={"help": "images per batch (0 = as trained)"})

    def check(self) -> None:
        for key, least in (("images", 1), ("eval_limit", -1), ("eval_batch_size", 0)):
            if getattr(self, key) < least:
                raise Invalid(key, f"must be at least {least}, not {getattr(self, key)}")


def recipe_overrides(args: EvaluateConfig) -> list[str]:
    """The data options the user set, as dotted overrides of the saved recipe."""
    chosen = {
        "data_dir": args.data_dir or None,
        "path": args.path or None,
        "eval_limit": args.eval_limit if args.eval_limit >= 0 else None,
        "eval_batch_size": args.eval_batch_size or None,
    }
    return [f"data.{key}={value}" for key, value in chosen.items() if value is not None]


@main_guard
def main(argv: list[str] | None = None) -> None:
    args = parse_cli(
        EvaluateConfig, argv, default_config=None, positional=("run",), description=__doc__.split("\n\n")[1]
    )
    if not args.run:
        raise UserError("name a run directory or checkpoint file (python -m tasks.vit.evaluate RUN)")
    trained = load_trained(args.run, ViTConfig, which=args.checkpoint, overrides=recipe_overrides(args))
    cfg = trained.cfg
    # The pixel statistics are buffers: the checkpoint's values replace these placeholders.
    model = trained.load_into(build_model(cfg.model, mean=(0.0,), std=(1.0,)))
    out = Path(args.out) if args.out else trained.run_dir / "figures"
    out.mkdir(parents=True, exist_ok=True)
    task = ViTTask(cfg)
    task.setup(
        RunContext(
            rank=0,
            world_size=1,
            local_rank=0,
            device=torch.device("cpu"),
            run_dir=trained.run_dir,
            seed=cfg.train.seed,
            precision=cfg.train.precision,
        )
    )

    with evaluation(model, cfg.train.precision):
        logits, labels = predict(model, task.test_loader())
    metrics = classification_metrics(logits, labels)
    record = {"checkpoint": str(trained.path), "step": trained.step, "ema": trained.ema, **metrics}
    (out / "metrics.json").write_text(json.dumps(record, indent=2) + "\n")
    classes = task.data.classes
    matrix = confusion_matrix(labels, logits.argmax(dim=-1), len(classes))
    plot_confusion_matrix(
        matrix,
        classes,
        out / "confusion_matrix.png",
        title=f"{cfg.data.dataset} test: top-1 {metrics['top1']:.2f}%",
    )

    count = min(args.images, len(task.test_set))
    picks = torch.linspace(0, len(task.test_set) - 1, count).long().tolist()  # spread over classes
    images = torch.stack([task.test_set[i][0] for i in picks])
    maps = attention_rollout(model, images)
    titles = [f"{classes[labels[i]]} -> {classes[logits[i].argmax()]}" for i in picks]
    looker = "the class token looks" if model.pool == "token" else "the pooled tokens look"
    plot_rollout(
        images,
        maps,
        titles,
        out / "attention_rollout.png",
        title=f"attention rollout: where {looker} (true -> predicted)",
    )
    weights = "EMA weights" if trained.ema else "weights"
    print(
        f"test top-1 {metrics['top1']:.2f}%  top-5 {metrics['top5']:.2f}%  loss "
        f"{metrics['loss']:.4f}  ({len(labels)} images, {weights} of {trained.path})"
    )
    print(f"wrote {out / 'metrics.json'}, {out / 'confusion_matrix.png'}, {out / 'attention_rollout.png'}")


if __name__ == "__main__":
    main()
