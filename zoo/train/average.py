"""Checkpoint averaging, for any task (the paper: the base model uses the average of the last 5
checkpoints, written at 10-minute intervals; the big model the last 20).

    python -m zoo.train.average RUN [--last 5] [--output RUN/averaged.pt]

The result loads like any checkpoint (`--checkpoint averaged` in the evaluation CLIs).

Floating-point tensors are averaged element-wise with float64 accumulation, then cast back to
their dtype; integer and bool tensors (step counters, index buffers) are taken from the last
state dict, since their mean is meaningless.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from torch import Tensor

from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.train.checkpoint import ema_weights, load_checkpoint, save_atomic, step_checkpoints


def average_state_dicts(states: Iterable[dict[str, Tensor]]) -> dict[str, Tensor]:
    """The element-wise mean of state dicts with the same keys and shapes.

    `states` may be a generator: only one state dict and the running sums are held at a time.
    """
    sums: dict[str, Tensor] = {}
    last: dict[str, Tensor] = {}
    count = 0
    for state in states:
        if count and state.keys() != last.keys():
            raise ValueError(
                f"state dict {count} has keys {sorted(state.keys() ^ last.keys())} "
                "that the others lack (or lacks theirs)"
            )
        for key, value in state.items():
            if count and value.shape != last[key].shape:
                raise ValueError(f"{key}: shape {tuple(value.shape)} differs from {tuple(last[key].shape)}")
            if value.is_floating_point():
                sums[key] = value.double() if count == 0 else sums[key].add_(value.double())
        last, count = state, count + 1
    if count == 0:
        raise ValueError("nothing to average")
    return {
        key: (sums[key] / count).to(value.dtype) if key in sums else value.clone()
        for key, value in last.items()
    }


def average_checkpoints(paths: list[str | Path]) -> dict[str, Tensor]:
    """The mean of the evaluated weights of zoo checkpoints (EMA when kept, else "model"),
    loaded one at a time."""

    def models() -> Iterable[dict[str, Tensor]]:
        for path in paths:
            state = load_checkpoint(path)
            if "model" not in state:
                raise UserError(f"{path}: no 'model' entry; not a zoo training checkpoint")
            yield ema_weights(state) or state["model"]

    return average_state_dicts(models())


# Copied from the newest checkpoint so the average loads and describes itself like the others;
# optimizer, scheduler and RNG states belong to one point of training, not to an average.
CARRIED_KEYS = ("config", "schema", "artifacts", "step", "metrics")


def average_run(run_dir: Path, last: int, output: Path) -> list[Path]:
    """Write the average of the newest `last` step checkpoints of `run_dir` to `output`."""
    found = step_checkpoints(run_dir / "checkpoints")
    if len(found) < last:
        raise UserError(
            f"{run_dir / 'checkpoints'}: {len(found)} step checkpoint(s), fewer than --last {last}"
        )
    paths = found[-last:]
    newest = load_checkpoint(paths[-1])
    state = {key: newest[key] for key in CARRIED_KEYS if key in newest}
    state["model"] = average_checkpoints(paths)
    state["averaged_from"] = [p.name for p in paths]
    save_atomic(state, output)
    return paths


@dataclass
class AverageConfig:
    run: str = field(default="", metadata={"help": "run directory (holding checkpoints/step_*.pt)"})
    last: int = field(default=5, metadata={"help": "how many of the newest step checkpoints to average"})
    output: str = field(
        default="", metadata={"help": "output file ('' = RUN/averaged.pt, where --checkpoint averaged looks)"}
    )


@main_guard
def main(argv: list[str] | None = None) -> None:
    args = parse_cli(AverageConfig, argv, default_config=None, description=__doc__, positional=("run",))
    if not args.run:
        raise UserError("give the run directory: python -m zoo.train.average RUN")
    if args.last < 1:
        raise UserError(f"key 'last': must be at least 1, not {args.last}")
    run = Path(args.run)
    output = Path(args.output) if args.output else run / "averaged.pt"
    paths = average_run(run, args.last, output)
    print(f"averaged {len(paths)} checkpoints ({paths[0].name} .. {paths[-1].name}) -> {output}")


if __name__ == "__main__":
    main()
