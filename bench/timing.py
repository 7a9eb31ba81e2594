"""Interleaved timing: the contenders take turns, so load from other processes hits both alike."""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import torch


def interleaved_medians(fns: dict[str, Callable[[], None]], *, repeats: int = 7,
                        warmup: int = 1) -> dict[str, float]:
    """Median wall seconds of each zero-argument callable over `repeats` alternating rounds."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def synced(fn: Callable[[], None], device: torch.device) -> Callable[[], None]:
    """`fn` followed by a CUDA synchronize on a GPU (kernels run asynchronously), else `fn`."""
    if device.type != "cuda":
        return fn
    import torch

    def run() -> None:
        fn()
        torch.cuda.synchronize()
    return run


def hardware() -> str:
    import platform

    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"
