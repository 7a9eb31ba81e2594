"""python -m tasks.translation.average --run DIR [--last N] [--out FILE]

Average the model weights of a run's newest N step checkpoints (the paper: last 5 for base,
last 20 for big) into one checkpoint with the same layout, which the evaluate and translate
CLIs load like any other.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zoo.cli import main_guard
from zoo.config import UserError
from zoo.train.average import average_checkpoints
from zoo.train.checkpoint import load_checkpoint, save_atomic, step_checkpoints

# Copied from the newest checkpoint so the result loads and describes itself like the others;
# optimizer, scheduler and RNG states belong to one point of training, not to an average.
CARRIED_KEYS = ("config", "step", "metrics")


def newest_checkpoints(run_dir: Path, last: int) -> list[Path]:
    found = step_checkpoints(run_dir / "checkpoints")
    if len(found) < last:
        raise UserError(f"{run_dir / 'checkpoints'}: {len(found)} step_*.pt checkpoint(s), "
                        f"fewer than --last {last}")
    return found[-last:]


def average_run(run_dir: Path, last: int, out: Path) -> list[Path]:
    """Write the average of the newest `last` checkpoints of `run_dir` to `out`; return them."""
    paths = newest_checkpoints(run_dir, last)
    newest = load_checkpoint(paths[-1])
    state = {key: newest[key] for key in CARRIED_KEYS if key in newest}
    state["model"] = average_checkpoints(paths)
    state["averaged_from"] = [p.name for p in paths]
    save_atomic(state, out)
    return paths


@main_guard
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tasks.translation.average",
        description="Average the model weights of a run's newest step checkpoints into one.")
    parser.add_argument("--run", type=Path, required=True,
                        help="run directory (the one holding checkpoints/step_*.pt)")
    parser.add_argument("--last", type=int, default=5,
                        help="how many of the newest step checkpoints to average (default 5)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output file (default: RUN/averaged.pt, where `--checkpoint averaged` looks)")
    args = parser.parse_args(argv)
    if args.last < 1:
        raise UserError(f"--last must be at least 1, not {args.last}")
    out = args.out or args.run / "averaged.pt"
    paths = average_run(args.run, args.last, out)
    print(f"averaged {len(paths)} checkpoints ({paths[0].name} .. {paths[-1].name}) -> {out}")


if __name__ == "__main__":
    main()
