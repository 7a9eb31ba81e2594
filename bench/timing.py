"""Interleaved timing: the contenders take turns, so load from other processes hits both alike."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench.output import add_out_option

if TYPE_CHECKING:
    import torch


def interleaved_medians(
    fns: dict[str, Callable[[], None]],
    *,
    repeats: int = 7,
    warmup: int = 1,
    primers: dict[str, Callable[[], None]] | None = None,
) -> dict[str, float]:
    """Median wall seconds of each zero-argument callable over `repeats` alternating rounds.

    `primers[name]`, when given, runs untimed right before each timed call of `name`: a call that
    follows another library's (another thread pool, another process) otherwise pays for waking
    its threads (at two threads here a 64-id GPT prefill took 11-20 ms after an idle or another
    process's call against 5-6 ms back to back: bench/results/gpt_split.md)."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            if primers and name in primers:
                primers[name]()
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


def cpu() -> str:
    """The head of `lscpu`: model, cores, caches, flags."""
    return subprocess.run("lscpu | head -20", shell=True, capture_output=True, text=True).stdout


def cpu_model() -> str:
    return next(
        (line.split(":", 1)[1].strip() for line in cpu().splitlines() if line.startswith("Model name")),
        "unknown CPU",
    )


def peer_arguments(
    doc: str | None, presets: dict, default_preset: str, *, compile_option: bool = False
) -> argparse.Namespace:
    """The options every peer speed bench takes (--device, --preset, --repeats, --threads, and
    --compile where the bench has compiled rows); applies --threads before any timing."""
    import torch

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--preset", choices=sorted(presets), default=default_preset)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0 = torch's default)")
    if compile_option:
        parser.add_argument(
            "--compile",
            action="store_true",
            help="also time both models' training steps under torch.compile (inductor)",
        )
    add_out_option(parser)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def run_meta(module: str, peer: str, peer_version: str, setup: dict) -> dict[str, Any]:
    """What a results file says about its run: the exact command, hardware and versions."""
    import torch

    command = f"python -m {module} " + " ".join(sys.argv[1:])
    return {
        "command": command.strip(),
        "hardware": hardware(),
        "torch": torch.__version__,
        peer: peer_version,
        "setup": setup,
    }
