"""Entry-point plumbing: user errors become one readable line and a non-zero exit."""

from __future__ import annotations

import errno
import functools
import signal
import sys
from collections.abc import Callable
from typing import TypeVar

from zoo.config import ConfigError, UserError
from zoo.train.interrupt import Interrupted

F = TypeVar("F", bound=Callable)


def main_guard(fn: F) -> F:
    """Run `fn`; a ConfigError, UserError or OS error (missing file, no permission, disk full)
    exits 2 with one line on stderr; a run stopped by a signal (after saving) exits 128 + the
    signal number with one line, and so does Ctrl-C anywhere else (130).

    Anything else is a bug and keeps its traceback.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ConfigError, UserError) as err:
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None
        except Interrupted as err:
            print(str(err), file=sys.stderr)
            raise SystemExit(err.exit_code) from None
        except KeyboardInterrupt as err:  # Ctrl-C outside a run's loop, or a second one inside
            print(str(err) or "interrupted by Ctrl-C", file=sys.stderr)
            raise SystemExit(128 + signal.SIGINT) from None
        except FileNotFoundError as err:
            print(f"error: file not found: {err.filename or err}", file=sys.stderr)
            raise SystemExit(2) from None
        except OSError as err:  # permissions, a full disk, a folder where a file belongs
            reason = "disk full" if err.errno == errno.ENOSPC else (err.strerror or str(err))
            where = f"{err.filename}: " if err.filename else ""
            print(f"error: {where}{reason}", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapper  # type: ignore[return-value]
