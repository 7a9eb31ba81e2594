"""Checkpoint averaging, for any task (the paper: the base model uses the average of the last 5
checkpoints, written at 10-minute intervals; the big model the last 20).

    python -m zoo average TASK RUN [--last 5] [--output RUN/averaged.pt]

The result loads like any checkpoint (`--checkpoint averaged` in the evaluation CLIs).

Floating-point tensors are averaged element-wise with float64 accumulation, then cast back to
their dtype; integer and bool tensors (step counters, index buffers) are taken from the last
state dict, since their mean is meaningless.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path

import torch
from torch import Tensor

from zoo.config import UserError
from zoo.train.checkpoint import STEP_FILE, ema_weights, load_checkpoint, save_atomic, step_checkpoints


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

    return average_state_dicts(evaluated_weights(load_checkpoint(path), path) for path in paths)


def evaluated_weights(state: dict, path: Path | str) -> dict[str, Tensor]:
    """The weights a zoo checkpoint is evaluated with: its EMA when kept, else its model."""
    if "model" not in state:
        raise UserError(f"{path}: no 'model' entry; not a zoo training checkpoint")
    return ema_weights(state) or state["model"]


# Copied from the newest checkpoint so the average loads and describes itself like the others;
# optimizer, scheduler and RNG states belong to one point of training, not to an average.
CARRIED_KEYS = ("config", "schema", "artifacts", "step", "metrics")


def check_average_output(output: Path, *, force: bool) -> None:
    """Refuse an --output the average must not replace: a run's training checkpoint (best.pt,
    step_*.pt in a checkpoints folder: resume would read the average), even with `force`; a
    directory; any other existing file that is not an earlier average, without `force`."""
    training = output.name == "best.pt" or STEP_FILE.match(output.name)
    if training and output.resolve().parent.name == "checkpoints":
        raise UserError(
            f"--output {output}: a training checkpoint of the run (resuming would read the average); "
            "write the average beside the checkpoints, as RUN/averaged.pt"
        )
    if output.is_dir():
        raise UserError(f"--output {output}: a directory; name the file to write")
    if output.exists() and not force and not is_average(output):
        raise UserError(
            f"--output {output} exists and is not an average written by this command: "
            "choose another --output or pass --force to replace it"
        )


def is_average(path: Path) -> bool:
    """Whether `path` is a checkpoint `average_run` wrote (it names the checkpoints averaged)."""
    try:
        with warnings.catch_warnings():  # torch warns about a foreign pickle's protocol
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)  # no tensor read
    except Exception:  # text, a foreign pickle, a truncated file: not ours
        return False
    return isinstance(state, dict) and "averaged_from" in state


def average_run(run_dir: Path, last: int, output: Path, *, schema: str = "") -> list[Path]:
    """Write the average of the newest `last` step checkpoints of `run_dir` to `output`.

    schema: the config class the run must have been trained with ('' = any task's run).
    """
    found = step_checkpoints(run_dir / "checkpoints")
    if len(found) < last:
        raise UserError(
            f"{run_dir / 'checkpoints'}: {len(found)} step checkpoint(s), fewer than --last {last}"
        )
    paths = found[-last:]
    newest = load_checkpoint(paths[-1])
    if schema and newest.get("schema", schema) != schema:
        raise UserError(f"{paths[-1]}: a checkpoint of {newest['schema']}, not of {schema}")
    state = {key: newest[key] for key in CARRIED_KEYS if key in newest}
    state["model"] = average_checkpoints(paths)
    state["averaged_from"] = [p.name for p in paths]
    save_atomic(state, output)
    return paths


if __name__ == "__main__":  # the command users had before the shared verbs
    from zoo.verbs.commands import average_any_task

    average_any_task()
