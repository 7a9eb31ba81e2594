"""How many CPU threads a run's torch uses when the recipe does not say (`train.threads=0`)."""

from __future__ import annotations

import os


def available_cores() -> int:
    """The cores this process may run on (a container's or taskset's limit, not the machine's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def auto_threads(cores: int, load: float) -> int:
    """The cores left idle by the load at start, at least one.

    OpenMP threads spin-wait for each other at every kernel: on cores another job is using, each
    waits for a thread that is not running, and the demo's ~1 s step took 6-10 s beside a busy
    job. On an idle machine this is every core, as torch's default is.
    """
    return max(1, min(cores, round(cores - load)))


def choose_threads(requested: int) -> tuple[int, str]:
    """(threads, why): `requested` when set, else the idle cores at start (see auto_threads)."""
    if requested > 0:
        return requested, "train.threads"
    omp = os.environ.get("OMP_NUM_THREADS", "")
    if omp.isdigit() and int(omp) > 0:  # torchrun and users who set it choose for us
        return int(omp), "OMP_NUM_THREADS"
    cores, load = available_cores(), os.getloadavg()[0]
    threads = auto_threads(cores, load)
    return threads, f"auto: {cores} cores, load average {load:.1f} at start; --train.threads=N to choose"
