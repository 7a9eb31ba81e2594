"""Checkpoints: written atomically, loaded without ever executing code, rotated.

A checkpoint is one `torch.save` file of tensors and plain containers (model, optimizer,
scheduler, EMA, step, data position, RNG states, the config as YAML text). It is written to a
temporary file, flushed to disk and renamed over the target, so a crash mid-write never leaves a
half-written checkpoint under a real name. Loading uses `torch.load(weights_only=True)`, which
refuses any pickled object that could run code.
"""

from __future__ import annotations

import logging
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch

from zoo.atomic import atomic_open
from zoo.config import UserError

log = logging.getLogger(__name__)

STEP_FILE = re.compile(r"^step_(\d+)\.pt$")


def save_atomic(obj: Any, path: Path) -> None:
    """torch.save to `path` through a temporary file and an atomic rename (zoo.atomic)."""
    with atomic_open(path) as f:
        torch.save(obj, f)


def load_checkpoint(path: str | Path) -> dict:
    """Load a checkpoint safely; any problem is a UserError that names the file."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"checkpoint not found: {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise UserError(f"{path}: refused to load: it holds objects other than tensors and plain "
                        f"containers, which could run code ({str(err).splitlines()[0][:200]})") from None
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile, ValueError) as err:
        raise UserError(f"{path}: not a readable checkpoint (truncated or corrupt?): "
                        f"{str(err).splitlines()[0][:200]}") from None
    if not isinstance(state, dict):
        raise UserError(f"{path}: not a zoo checkpoint (top level is {type(state).__name__})")
    return state


def step_checkpoints(directory: Path) -> list[Path]:
    """step_*.pt files in `directory`, oldest first."""
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := STEP_FILE.match(p.name))]
    return [p for _, p in sorted(found)]


class CheckpointManager:
    """Keeps the last `keep_last` step checkpoints and the best one by a metric.

    Args:
        directory: where step_XXXXXXXX.pt and best.pt live.
        keep_last: how many step checkpoints to keep.
        best_metric: evaluation metric that decides best.pt ('' = no best.pt).
        best_mode: "max" or "min".
    """

    def __init__(self, directory: Path, *, keep_last: int, best_metric: str = "",
                 best_mode: str = "max") -> None:
        if best_mode not in ("max", "min"):
            raise UserError(f"key 'train.best_mode': must be max or min, not {best_mode!r}")
        self.directory = Path(directory)
        self.keep_last = max(1, keep_last)
        self.best_metric, self.best_mode = best_metric, best_mode

    def is_better(self, value: float, best: float | None) -> bool:
        if best is None:
            return True
        return value > best if self.best_mode == "max" else value < best

    def save(self, state: dict, step: int, metrics: dict[str, float] | None) -> float | None:
        """Write step_{step}.pt, prune old ones, refresh best.pt; returns the best value so far."""
        best = state.get("best")
        if self.best_metric and metrics and self.best_metric in metrics:
            value = float(metrics[self.best_metric])
            if self.is_better(value, best):
                best = state["best"] = value
                save_atomic(state, self.directory / "best.pt")
        save_atomic(state, self.directory / f"step_{step:08d}.pt")
        for old in step_checkpoints(self.directory)[: -self.keep_last]:
            old.unlink(missing_ok=True)
        return best

    def latest_valid(self) -> tuple[Path, dict] | None:
        """The newest step checkpoint that loads; corrupt ones are skipped with a warning."""
        for path in reversed(step_checkpoints(self.directory)):
            try:
                return path, load_checkpoint(path)
            except UserError as err:
                log.warning("skipping unusable checkpoint: %s", err)
        return None
