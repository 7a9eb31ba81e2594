"""Entry-point plumbing: user errors become one readable line and a non-zero exit."""

from __future__ import annotations

import functools
import sys
from typing import Callable, TypeVar

from zoo.config import ConfigError, UserError

F = TypeVar("F", bound=Callable)


def main_guard(fn: F) -> F:
    """Run `fn`; a ConfigError, UserError or missing file exits 2 with one line on stderr.

    Anything else is a bug and keeps its traceback.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ConfigError, UserError) as err:
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None
        except FileNotFoundError as err:
            print(f"error: file not found: {err.filename or err}", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapper  # type: ignore[return-value]
