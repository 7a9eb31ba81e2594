"""Where data sets live: the data-directory setting and checks for required files.

Data is never stored in the repository. Every task finds it through one setting: the config key
`data.data_dir`, else the environment variable ZOO_DATA_DIR.
"""

from __future__ import annotations

import os
from pathlib import Path

from zoo.atomic import atomic_open
from zoo.config import UserError

ENV_VAR = "ZOO_DATA_DIR"


def resolve_data_dir(value: str | None) -> Path | None:
    """The data directory: `value` if given, else $ZOO_DATA_DIR, else None.

    Args:
        value: the configured directory; None or "" means "not set".

    Raises:
        UserError: the chosen directory does not exist (the message names it and where it came
            from).
    """
    source = "data.data_dir"
    if not value:
        value, source = os.environ.get(ENV_VAR) or None, ENV_VAR
    if value is None:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise UserError(f"data directory not found: {path} (from {source})")
    return path


def under_data_dir(data_dir: str, path: str) -> Path:
    """`path` as given when absolute, else under the data directory (`data_dir`, else
    $ZOO_DATA_DIR); a relative path with neither is a UserError naming it."""
    candidate = Path(path).expanduser()
    if candidate.is_absolute():
        return candidate
    root = resolve_data_dir(data_dir)
    if root is None:
        raise UserError(f"the relative path {path!r} needs a data directory: set data.data_dir or ${ENV_VAR}")
    return root / candidate


def require(path: Path, what: str) -> Path:
    """`path` if it is an existing file, else a UserError naming `what` and the missing path.

    Args:
        path: the file that must exist.
        what: what it is, for the message ("Multi30k training source").
    """
    if not path.is_file():
        raise UserError(f"{what} not found: {path}")
    return path


def write_atomic(path: Path, data: bytes) -> Path:
    """Write `data` to `path` atomically (see zoo.atomic), so readers and other ranks writing
    the same file never see it half written."""
    with atomic_open(path) as f:
        f.write(data)
    return path
