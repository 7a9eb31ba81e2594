"""python -m tasks.vit.train [--config FILE] [--key.sub=value ...]: train a ViT classifier.

With no arguments it trains on scikit-learn's bundled handwritten digits (offline, a few
minutes on two CPU cores). The recipe is configs/vit/digits.yaml when run from a checkout; an
installed package has no configs/ folder and uses the schema's defaults, which are the same
recipe (a test keeps the two equal).
"""

from __future__ import annotations

from pathlib import Path

from tasks.vit.config import ViTConfig
from tasks.vit.task import ViTTask, num_parameters
from zoo.cli import main_guard
from zoo.config import parse_cli
from zoo.train import fit

DEFAULT_RECIPE = Path(__file__).resolve().parents[2] / "configs" / "vit" / "digits.yaml"
CIFAR10_COMMAND = (
    "python -m tasks.vit.train --config configs/vit/cifar10.yaml "
    "--data.data_dir=PATH  (PATH holds cifar10/{train,test}; "
    "without it torchvision downloads CIFAR-10)"
)


@main_guard
def main(argv: list[str] | None = None) -> None:
    cfg = parse_cli(
        ViTConfig,
        argv,
        default_config=DEFAULT_RECIPE if DEFAULT_RECIPE.is_file() else None,
        description="Train a Vision Transformer image classifier.",
    )
    result = fit(cfg, ViTTask(cfg))
    m = result.metrics
    print(
        f"test top-1 {m['top1']:.2f}%  top-5 {m['top5']:.2f}%  ({cfg.data.dataset}, "
        f"{num_parameters(result.model):,} parameters, {result.step} steps; "
        f"run directory {result.run_dir})"
    )
    print(f"figures: python -m tasks.vit.evaluate {result.run_dir}")
    print(f"CIFAR-10 recipe: {CIFAR10_COMMAND}")


if __name__ == "__main__":
    main()
