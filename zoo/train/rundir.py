"""A run directory holds one run: locked while used, resumed only with a compatible config,
replaced only when asked, and cleaned of the leftovers of interrupted writes.

Layout: config.yaml, checkpoints/step_XXXXXXXX.pt + best.pt, metrics.jsonl, summary.json,
tensorboard/, and whatever the task keeps there (a tokenizer). `.lock` is held by rank 0 for
the life of the run (an flock: the kernel drops it if the process dies, even by kill -9).
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from zoo.atomic import atomic_open, clean_partial_writes
from zoo.config import UserError

# Sections whose change makes a checkpoint mean something else (other shapes, other data, other
# tokenizer). Everything else (schedule, step budget, logging, evaluation) may change on resume.
FROZEN_SECTIONS = ("model.", "data.")
FROZEN_KEYS = ("train.seed", "optim.name")


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings -> {"a.b.c": leaf}."""
    if not isinstance(tree, dict):
        return {prefix.rstrip("."): tree}
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        flat.update(flatten(value, f"{prefix}{key}."))
    return flat


def frozen_differences(saved_yaml: str, current_yaml: str) -> list[str]:
    """Keys of the model and data (and the seed, the optimizer) that differ between two configs."""
    old = flatten(OmegaConf.to_container(OmegaConf.create(saved_yaml)))
    new = flatten(OmegaConf.to_container(OmegaConf.create(current_yaml)))
    keys = sorted(k for k in old.keys() | new.keys() if k.startswith(FROZEN_SECTIONS) or k in FROZEN_KEYS)
    return [
        f"{k} ({old.get(k, '<absent>')!r} -> {new.get(k, '<absent>')!r})"
        for k in keys
        if old.get(k) != new.get(k)
    ]


class RunDirectory:
    """Prepares `path` for a run (rank 0 only; other ranks just use the path).

    Args:
        path: the run directory (`train.out_dir`).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.checkpoints = self.path / "checkpoints"
        self._lock_fd: int | None = None

    def holds_run(self) -> bool:
        return (self.path / "config.yaml").is_file() or any(self.checkpoints.glob("step_*.pt"))

    def prepare(self, config_yaml: str, *, resume: bool) -> str:
        """Make the directory ready; returns "new", "resume" or "replaced".

        Raises UserError if the directory cannot be written, is in use by another run, or holds
        a run whose model or data settings differ from `config_yaml` (when resuming).
        """
        self._make_writable()
        self._lock()
        for leftover in clean_partial_writes(self.path) + clean_partial_writes(self.checkpoints):
            print(f"removed {leftover} (left by an interrupted write)")
        outcome = "new"
        if self.holds_run():
            if resume:
                self._check_compatible(config_yaml)
                outcome = "resume"
            else:
                moved = self._move_aside()
                print(f"train.resume=false: the previous run in {self.path} was moved to {moved}")
                outcome = "replaced"
        self.write_config(config_yaml)
        return outcome

    def write_config(self, config_yaml: str) -> None:
        """config.yaml: the recipe as the user gave it (values derived from it, such as the
        accumulation from a token budget, live in the run context, never here)."""
        with atomic_open(self.path / "config.yaml") as f:
            f.write(config_yaml.encode())

    def _make_writable(self) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            probe = self.path / f".write-probe-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as err:
            reason = "disk full" if err.errno == errno.ENOSPC else (err.strerror or str(err))
            raise UserError(
                f"run directory {self.path} (train.out_dir) cannot be written: {reason}"
            ) from None

    def _lock(self) -> None:
        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise UserError(
                f"run directory {self.path} is in use by {holder}: one run per "
                "directory (choose another train.out_dir)"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}".encode())
        self._lock_fd = fd

    def release(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def _check_compatible(self, config_yaml: str) -> None:
        saved = self.path / "config.yaml"
        if not saved.is_file():
            return
        differences = frozen_differences(saved.read_text(), config_yaml)
        if differences:
            raise UserError(
                f"{saved}: the run in {self.path} was trained with other model/data "
                f"settings: {'; '.join(differences)}. Use the same settings to resume, "
                "another train.out_dir, or --train.resume=false to start over "
                "(the old run is moved aside, not deleted)"
            )

    def _move_aside(self) -> Path:
        """Move every entry but the lock into PATH/replaced-<time>/ (nothing is deleted)."""
        target = self.path / time.strftime("replaced-%Y%m%d-%H%M%S")
        target.mkdir()
        for entry in self.path.iterdir():
            if entry.name != ".lock" and not entry.name.startswith("replaced-"):
                entry.rename(target / entry.name)
        return target
