"""SIGTERM (schedulers, `timeout`) and Ctrl-C end a run cleanly: the runner finishes the step,
writes a checkpoint and exits with 128 + the signal number. A second Ctrl-C stops at once."""

from __future__ import annotations

import signal
import threading
from types import FrameType


class Interrupted(Exception):
    """The run stopped on a signal after saving; `exit_code` is 128 + signal number."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum


class StopRequest:
    """Records the first SIGTERM/SIGINT while installed (a context manager)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum == signal.SIGINT and signum == signal.SIGINT:
            # Asked twice: stop now, without saving (main_guard: exit 130, one line).
            raise KeyboardInterrupt(
                "stopped at once by a second Ctrl-C, without saving this step; run the same "
                "command again to resume from the last checkpoint saved"
            )
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():  # signals go to the main thread
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
