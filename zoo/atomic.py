"""Atomic file writes: a reader (or a crash) never sees a half-written file under its real name."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

# Temporary files are hidden and end with this, so a later start can find and remove the ones
# an interrupted write (kill -9, power loss) left behind.
TEMP_SUFFIX = ".partial"


@contextlib.contextmanager
def atomic_open(path: str | Path) -> Iterator[BinaryIO]:
    """Yield a binary file in `path`'s directory; on success it is flushed to disk and renamed
    over `path` (and the rename made durable); on any error it is deleted and `path` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    # mkstemp makes the file private (0600); the finished file gets the mode open() would give it.
    os.fchmod(fd, 0o666 & ~umask())
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def umask() -> int:
    """The bits a new file or folder's mode loses (0o022 for most)."""
    mask = os.umask(0)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def clean_partial_writes(directory: str | Path) -> list[Path]:
    """Delete the temporary files interrupted atomic writes left in `directory`; return them."""
    directory = Path(directory)
    found = sorted(directory.glob(f".*{TEMP_SUFFIX}")) if directory.is_dir() else []
    for path in found:
        path.unlink(missing_ok=True)
    return found
