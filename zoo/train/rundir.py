"""A run directory holds one run: locked while used, resumed only with a compatible config,
replaced only when asked, and cleaned of the leftovers of interrupted writes.

Layout: config.yaml, checkpoints/step_XXXXXXXX.pt + best.pt, metrics.jsonl, summary.json,
tensorboard/, and whatever the task keeps there (a tokenizer). `.lock` is held by rank 0 for
the life of the run (an flock: the kernel drops it if the process dies, even by kill -9).
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import os
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from zoo.atomic import atomic_open, clean_partial_writes
from zoo.config import UserError
from zoo.train.checkpoint import UNREADABLE_SUFFIX, step_checkpoints

# Sections whose change makes a checkpoint mean something else (other shapes, other data, other
# tokenizer). Everything else (schedule, step budget, logging, evaluation) may change on resume,
# and so may any field of these sections whose metadata says {"resume": "may change"}: where the
# data is read from (data_dir, path), how fast (num_workers) and how much of it is evaluated.
FROZEN_SECTIONS = ("model.", "data.")
FROZEN_KEYS = ("train.seed", "optim.name")
MAY_CHANGE = "may change"


def may_change_on_resume(cfg: Any, prefix: str = "") -> set[str]:
    """Dotted keys of `cfg` (a config dataclass) marked field(metadata={"resume": "may change"})."""
    keys: set[str] = set()
    if not dataclasses.is_dataclass(cfg):
        return keys
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            keys |= may_change_on_resume(value, f"{prefix}{f.name}.")
        elif f.metadata.get("resume") == MAY_CHANGE:
            keys.add(f"{prefix}{f.name}")
    return keys


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings -> {"a.b.c": leaf}."""
    if not isinstance(tree, dict):
        return {prefix.rstrip("."): tree}
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        flat.update(flatten(value, f"{prefix}{key}."))
    return flat


SHOWN_DIFFERENCES = 5  # keys a refused resume lists; the rest are counted


def frozen_differences(saved_yaml: str, current_yaml: str, may_change: Collection[str] = ()) -> list[str]:
    """Keys of the model and data (and the seed, the optimizer) that differ between two configs,
    but for those in `may_change`."""
    old = flatten(OmegaConf.to_container(OmegaConf.create(saved_yaml)))
    new = flatten(OmegaConf.to_container(OmegaConf.create(current_yaml)))
    keys = sorted(
        k
        for k in old.keys() | new.keys()
        if (k.startswith(FROZEN_SECTIONS) or k in FROZEN_KEYS) and k not in may_change
    )
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

    def contents(self) -> list[str]:
        """What of a run the directory holds, in words (empty: it holds no run)."""
        found = []
        if (self.path / "config.yaml").is_file():
            found.append("config.yaml")
        steps = len(step_checkpoints(self.checkpoints))
        if steps:
            found.append(f"{steps} step checkpoint{'s' if steps > 1 else ''}")
        if (self.checkpoints / "best.pt").is_file():
            found.append("checkpoints/best.pt")
        unreadable = (
            len(list(self.checkpoints.glob(f"*{UNREADABLE_SUFFIX}"))) if self.checkpoints.is_dir() else 0
        )
        if unreadable:
            found.append(f"{unreadable} *{UNREADABLE_SUFFIX} checkpoint{'s' if unreadable > 1 else ''}")
        return found

    def prepare(self, config_yaml: str, *, resume: bool, may_change: Collection[str] = ()) -> str:
        """Make the directory ready; returns "new", "resume" or "replaced".

        Raises UserError if the directory cannot be written, is in use by another run, or holds
        a run that cannot be resumed: its model or data settings differ from `config_yaml`
        (but for the keys in `may_change`), or it has no step checkpoint but best.pt or unreadable
        ones (starting from step 0 would overwrite them); a run that saved nothing starts anew. Writes no run
        file: config.yaml is written by `write_config` once the start has passed its checks.
        """
        self._make_writable()
        self._lock()
        for leftover in clean_partial_writes(self.path) + clean_partial_writes(self.checkpoints):
            print(f"removed {leftover} (left by an interrupted write)")
        found = self.contents()
        if not found:
            return "new"
        if not resume:
            moved = self._move_aside()
            print(f"train.resume=false: the previous run in {self.path} was moved to {moved}")
            return "replaced"
        if found == ["config.yaml"]:
            # Stopped (or crashed) before its first checkpoint: no trained weights to lose.
            print(f"{self.path} holds a run that saved no checkpoint: starting it from step 0")
            return "new"
        if not step_checkpoints(self.checkpoints):
            raise UserError(
                f"{self.path} holds a run ({', '.join(found)}) but no step checkpoint to resume from; "
                "nothing was changed. To start over, pass --train.resume=false (the old run is moved "
                "aside into a replaced-TIME folder, not deleted) or choose another train.out_dir"
            )
        self._check_compatible(config_yaml, may_change)
        return "resume"

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

    def _check_compatible(self, config_yaml: str, may_change: Collection[str]) -> None:
        saved = self.path / "config.yaml"
        if not saved.is_file():
            return
        differences = frozen_differences(saved.read_text(), config_yaml, may_change)
        if differences:
            shown = "; ".join(differences[:SHOWN_DIFFERENCES])
            if len(differences) > SHOWN_DIFFERENCES:  # most keys differ: another task's run, say
                shown += (
                    f"; and {len(differences) - SHOWN_DIFFERENCES} more (a run of another recipe or task?)"
                )
            raise UserError(
                f"{saved}: the run in {self.path} was trained with other model/data "
                f"settings: {shown}. Use the same settings to resume, "
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
