"""python -m tasks.reverse.train [--config FILE] [--key=value ...]: the runner's demo."""

from __future__ import annotations

from tasks.reverse.config import ReverseConfig
from tasks.reverse.task import ReverseTask
from zoo.cli import main_guard
from zoo.config import parse_cli
from zoo.train import fit


@main_guard
def main(argv: list[str] | None = None) -> None:
    cfg = parse_cli(
        ReverseConfig,
        argv,
        default_config=None,
        description="Train a tiny encoder-decoder to reverse random sequences.",
    )
    result = fit(cfg, ReverseTask(cfg))
    print(
        f"held-out token accuracy {result.metrics['token_acc']:.4f}, "
        f"sequence accuracy {result.metrics['seq_acc']:.4f} after {result.step} steps "
        f"(run directory: {result.run_dir})"
    )


if __name__ == "__main__":
    main()
