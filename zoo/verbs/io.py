"""Where the verbs read inputs and write outputs: checked before any model is loaded, so a
mistyped path costs a second, not a decoding run."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from zoo.config import UserError
from zoo.data.text import read_lines, stdin_lines


def check_writable(path: str, option: str) -> None:
    """Fail early when the file an option names cannot be written there."""
    if not path:
        return
    folder = Path(path).expanduser().absolute().parent
    if not folder.is_dir():
        raise UserError(f"--{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UserError(f"--{option} {path}: folder {folder} is not writable")


def check_readable(path: str, option: str) -> None:
    if path and not Path(path).is_file():
        raise UserError(f"--{option}: file not found: {path}")


def input_lines(path: str, *, limit: int = 0) -> list[str]:
    """The lines of `path` ('' = stdin), UTF-8 checked line by line, the first `limit` (0 = all)."""
    check_readable(path, "input")
    lines = list(read_lines(Path(path)) if path else stdin_lines())
    return lines[:limit] if limit else lines


def write_text(path: str, text: str) -> None:
    """`text` to the file `path`, or to stdout when `path` is ''."""
    if path:
        Path(path).write_text(text)
    else:
        sys.stdout.write(text)


def write_directory(output: Path, fill: Callable[[Path], None], *, force: bool) -> None:
    """Fill a new directory and move it into place at `output`: a failure leaves nothing half
    written, and an existing directory is replaced only with `force` (one rule for every writer)."""
    if output.exists() and not force:
        raise UserError(f"{output} exists: choose another --output or pass --force to replace it")
    check_writable(str(output), "output")
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.absolute().parent))
    try:
        fill(staging)
        if output.exists():
            shutil.rmtree(output) if output.is_dir() else output.unlink()
        staging.rename(output)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
