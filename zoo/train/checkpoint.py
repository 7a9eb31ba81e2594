"""Checkpoints: written atomically, loaded without ever executing code, rotated without ever
deleting the last good one, and loaded back into models strictly.

A checkpoint is one `torch.save` file of tensors and plain containers (model, optimizer,
scheduler, EMA, step, data position, RNG states, the config as YAML text, the config's schema
name, and the task's artifacts such as its tokenizer). It is written to a temporary file,
flushed to disk and renamed over the target, so a crash mid-write never leaves a half-written
checkpoint under a real name. Loading uses `torch.load(weights_only=True)`, which refuses any
pickled object that could run code.
"""

from __future__ import annotations

import errno
import re
import shutil
import sys
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import torch
from torch import Tensor, nn

from zoo.atomic import atomic_open
from zoo.config import ConfigError, UserError, from_yaml, load_config

STEP_FILE = re.compile(r"^step_(\d+)\.pt$")
# What a step checkpoint must hold for training to resume from it.
RESUME_KEYS = ("model", "optimizer", "scheduler", "step", "position", "rng", "config")
UNREADABLE_SUFFIX = ".unreadable"
C = TypeVar("C")


def schema_name(schema: type) -> str:
    return f"{schema.__module__}.{schema.__qualname__}"


class _RecordingWriter:
    """The file torch.save writes through: keeps the OSError of a failed write, which torch
    turns into a RuntimeError that no longer says why ("file write failed")."""

    def __init__(self, f: BinaryIO) -> None:
        self.f, self.error = f, None

    def write(self, data: bytes) -> int:
        try:
            return self.f.write(data)
        except OSError as err:
            self.error = err
            raise

    def flush(self) -> None:
        self.f.flush()


def save_atomic(obj: Any, path: Path) -> None:
    """torch.save to `path` through a temporary file and an atomic rename (zoo.atomic);
    a full disk or an unwritable folder is a UserError that says so, in one line."""
    failed: tuple[BaseException, int] | None = None
    try:
        with atomic_open(path) as f:
            writer = _RecordingWriter(f)
            try:
                torch.save(obj, writer)
            except (OSError, RuntimeError) as err:
                # Measured now: the partial file is deleted on the way out, freeing its space.
                failed = (writer.error or err, shutil.disk_usage(path.parent).free)
                raise
    except (OSError, RuntimeError) as err:
        cause, free = failed or (err, shutil.disk_usage(path.parent).free if path.parent.is_dir() else -1)
        if getattr(cause, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or 0 <= free < 1 << 20:
            raise UserError(f"could not write {path}: disk full ({free:,} bytes free)") from None
        if isinstance(cause, OSError):
            raise UserError(f"could not write {path}: {cause.strerror or cause}") from None
        raise


def load_checkpoint(path: str | Path) -> dict:
    """Load a checkpoint safely; any problem is a UserError of one line that names the file."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"checkpoint {path}: a directory, not a checkpoint file")
    if not path.is_file():
        raise UserError(f"checkpoint not found: {path}")
    try:
        with warnings.catch_warnings():  # torch warns on stderr about a foreign pickle's protocol
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except MemoryError:
        raise
    except Exception as err:  # torch raises KeyError, EOFError, RuntimeError, ... for junk
        raise UserError(f"{path}: {load_failure(path, err)}") from None
    if not isinstance(state, dict):
        raise UserError(f"{path}: not a zoo checkpoint (top level is {type(state).__name__})")
    return state


_BOILERPLATE = ("Weights only load failed", "Please file an issue", "Check the documentation", "In PyTorch")
_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")


def load_failure(path: Path, err: BaseException) -> str:
    """Why `path` did not load, in words and one line: not a checkpoint at all (text, an empty
    file, a foreign pickle), truncated or corrupt, or refused because it could run code."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError as read_err:
        return f"cannot be read: {read_err.strerror or read_err}"
    text = str(err)
    unsafe = _GLOBAL.search(text)
    if not head:
        return "not a checkpoint: the file is empty (an interrupted copy?)"
    if head.startswith(b"PK"):
        if not zipfile.is_zipfile(path):
            return "not a readable checkpoint: truncated or corrupt (an incomplete zip archive)"
    elif not head.startswith(b"\x80\x02"):  # neither torch's zip format nor its legacy pickle
        try:
            first = head.decode().strip().splitlines()[0][:60]
            return f"not a checkpoint: a text file ({first!r} ...)"
        except (UnicodeDecodeError, IndexError):
            return "not a checkpoint: neither a torch zip archive nor a torch pickle"
    if unsafe:
        return (
            f"refused to load: it holds a pickled {unsafe.group(1)}, not only tensors and plain "
            "containers, and loading it could run code"
        )
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith(_BOILERPLATE)]
    detail = (lines[0] if lines else type(err).__name__)[:200]
    return f"not a readable checkpoint (truncated or corrupt?): {detail}"


def step_checkpoints(directory: Path) -> list[Path]:
    """step_*.pt files in `directory`, oldest first."""
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := STEP_FILE.match(p.name))]
    return [p for _, p in sorted(found)]


def load_weights(model: nn.Module, weights: dict[str, Tensor], source: Path | str) -> nn.Module:
    """Strict load_state_dict whose failure is one line naming the file and the keys."""
    own = model.state_dict()
    missing = sorted(own.keys() - weights.keys())
    unused = sorted(weights.keys() - own.keys())
    shapes = [
        f"{k} {tuple(weights[k].shape)} vs {tuple(v.shape)}"
        for k, v in own.items()
        if k in weights and weights[k].shape != v.shape
    ]
    if missing or unused or shapes:
        parts = [
            f"{label}: {', '.join(keys[:4])}{' ...' if len(keys) > 4 else ''}"
            for label, keys in (("missing", missing), ("unexpected", unused), ("shape mismatch", shapes))
            if keys
        ]
        raise UserError(f"{source}: weights do not fit this model ({'; '.join(parts)})")
    model.load_state_dict(weights)
    return model


def ema_weights(state: dict) -> dict[str, Tensor] | None:
    """The EMA copy of the model in a checkpoint (AveragedModel keys "module.*"), if kept."""
    if "ema" not in state:
        return None
    return {k.removeprefix("module."): v for k, v in state["ema"].items() if k.startswith("module.")}


class CheckpointManager:
    """Keeps the last `keep_last` step checkpoints and the best one by a metric.

    Only checkpoints that load are kept under their step names: at resume, unreadable or
    non-resumable files are renamed `*.unreadable` (never deleted), so rotation, which counts
    step files, can never delete the last good checkpoint in favour of broken ones.

    Args:
        directory: where step_XXXXXXXX.pt and best.pt live.
        keep_last: how many step checkpoints to keep.
        best_metric: evaluation metric that decides best.pt ('' = no best.pt).
        best_mode: "max" or "min".
    """

    def __init__(
        self, directory: Path, *, keep_last: int, best_metric: str = "", best_mode: str = "max"
    ) -> None:
        if best_mode not in ("max", "min"):
            raise UserError(f"key 'train.best_mode': must be max or min, not {best_mode!r}")
        self.directory = Path(directory)
        self.keep_last = max(1, keep_last)
        self.best_metric, self.best_mode = best_metric, best_mode

    @property
    def best_path(self) -> Path:
        return self.directory / "best.pt"

    def is_better(self, metrics: dict[str, float], best: float | None) -> bool:
        if not self.best_metric or self.best_metric not in metrics:
            return False
        value = float(metrics[self.best_metric])
        if best is None:
            return True
        return value > best if self.best_mode == "max" else value < best

    def save(self, state: dict, step: int) -> Path:
        """Write step_{step}.pt, then prune the oldest beyond keep_last."""
        path = self.directory / f"step_{step:08d}.pt"
        save_atomic(state, path)
        for old in step_checkpoints(self.directory)[: -self.keep_last]:
            old.unlink(missing_ok=True)
        return path

    def save_best(self, state: dict) -> None:
        save_atomic(state, self.best_path)

    def best_value(self) -> float | None:
        """The metric value stored in best.pt (the truth after a crash between saves)."""
        if not self.best_path.is_file():
            return None
        try:
            return torch.load(self.best_path, map_location="cpu", weights_only=True, mmap=True).get("best")
        except Exception:  # an unreadable best.pt is replaced by the next better evaluation
            return None

    def latest_valid(self) -> tuple[Path, dict] | None:
        """The newest step checkpoint that loads and can be resumed from.

        Newer files that cannot (whatever the reason: junk, truncated, unsafe, not a step
        checkpoint) are renamed aside with a notice naming them. Raises UserError when step
        files exist but none of them can be resumed (starting over would hide the problem);
        None when there are no step files at all (the run directory decides what that means).
        """
        found = step_checkpoints(self.directory)
        for path in reversed(found):
            try:
                state = load_checkpoint(path)
                lacking = [k for k in RESUME_KEYS if k not in state]
                if lacking:
                    raise UserError(
                        f"{path}: not a step checkpoint (lacks {', '.join(lacking)}; "
                        "an averaged or exported model?)"
                    )
                return path, state
            except UserError as err:
                aside = path.with_name(path.name + UNREADABLE_SUFFIX)
                path.rename(aside)
                # A notice, not an error: stdout, so stderr keeps only a failure's one line.
                print(f"skipping {err}; renamed to {aside.name}", flush=True)
        if found:
            best = " (best.pt is kept)" if self.best_path.is_file() else ""
            raise UserError(
                f"{self.directory}: none of the {len(found)} step checkpoints can be resumed "
                f"(renamed *.unreadable){best}; nothing was trained. To start over, pass "
                "--train.resume=false (the old run is moved aside, not deleted) or choose another "
                "train.out_dir"
            )
        return None


@dataclass
class Trained(Generic[C]):
    """A trained model's recipe and weights, as `load_trained` found them."""

    cfg: C
    weights: dict[str, Tensor]  # EMA weights when the run kept them, else the model's
    artifacts: dict[str, bytes]  # files the task keeps in its checkpoints (its tokenizer)
    path: Path  # the checkpoint file
    run_dir: Path
    step: int
    ema: bool

    def load_into(self, model: nn.Module) -> nn.Module:
        """Strictly load the weights into `model` (built from `cfg`); returns it in eval mode."""
        return load_weights(model, self.weights, self.path).eval()


def resolve_checkpoint(source: str | Path, which: str = "best") -> tuple[Path, Path]:
    """(checkpoint file, run directory) from a run directory or a file.

    which: best | last | averaged (python -m zoo.train.average) | a file. `best` falls back to
    the last step checkpoint, with a notice, when the run kept no best.pt (no train.best_metric).
    """
    source = Path(source)
    if source.is_file():
        run_dir = source.parent.parent if source.parent.name == "checkpoints" else source.parent
        return source, run_dir
    if not source.is_dir():
        raise UserError(f"no such run directory or checkpoint file: {source}")
    checkpoints = source / "checkpoints"
    if which in ("best", "last"):
        best = checkpoints / "best.pt"
        if which == "best" and best.is_file():
            return best, source
        steps = step_checkpoints(checkpoints)
        if not steps:
            raise UserError(f"{source}: no checkpoints in {checkpoints}")
        if which == "best":
            # stderr: a verb's --json output on stdout must stay one JSON record
            print(
                f"note: {source} has no best.pt (train.best_metric unset): using {steps[-1].name}",
                file=sys.stderr,
            )
        return steps[-1], source
    path = source / "averaged.pt" if which == "averaged" else Path(which)
    if not path.is_file():
        raise UserError(
            f"checkpoint not found: {path}"
            + (" (write it with python -m zoo.train.average RUN)" if which == "averaged" else "")
        )
    return path, source


def load_trained(
    source: str | Path, schema: type[C], *, which: str = "best", overrides: list[str] | None = None
) -> Trained[C]:
    """The one loader of trained models for every evaluation and inference CLI.

    Args:
        source: a run directory or a checkpoint file.
        schema: the task's config dataclass; a checkpoint of another task is refused.
        which: best | last | averaged | a file (see resolve_checkpoint).
        overrides: dotted overrides of the saved recipe (data paths, decoding); the model
            section comes from the checkpoint and cannot be overridden.
    """
    path, run_dir = resolve_checkpoint(source, which)
    state = load_checkpoint(path)
    if "config" not in state or "model" not in state:
        raise UserError(f"{path}: not a zoo training checkpoint (no 'config' or 'model' entry)")
    saved_schema = state.get("schema")
    if saved_schema is not None and saved_schema != schema_name(schema):
        raise UserError(
            f"{path}: a checkpoint of {saved_schema}, not of {schema_name(schema)}: "
            "use the evaluate/inference commands of the task that trained it"
        )
    for item in overrides or []:
        if item.lstrip("-").startswith("model."):
            raise UserError(f"override {item!r}: the model comes from the checkpoint and cannot change")
    try:
        cfg = from_yaml(schema, state["config"])
        if overrides:
            cfg = load_config(schema, None, overrides, base=cfg)
    except ConfigError as err:
        raise UserError(f"{path}: {err}") from None
    except Exception as err:  # a config of another task fails inside OmegaConf's merge
        raise UserError(
            f"{path}: its config does not fit {schema_name(schema)} ({str(err).splitlines()[0][:200]})"
        ) from None
    ema = ema_weights(state)
    return Trained(
        cfg=cfg,
        weights=ema if ema is not None else state["model"],
        artifacts=dict(state.get("artifacts", {})),
        path=path,
        run_dir=run_dir,
        step=int(state.get("step", 0)),
        ema=ema is not None,
    )
