"""Peak memory of a training run, for its log and summary: the figure that activation
checkpointing, FSDP and the batch size trade speed for."""

from __future__ import annotations

import resource
import sys

import torch


def peak_memory_gib(device: torch.device) -> dict[str, float]:
    """The process's peak resident memory and, on CUDA, the most memory torch's allocator has
    held for tensors on `device` since the process began (torch.cuda.max_memory_allocated)."""
    # ru_maxrss is in KiB on Linux and in bytes on macOS.
    rss_unit = 1 if sys.platform == "darwin" else 1024
    peaks = {"peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * rss_unit / 2**30}
    if device.type == "cuda":
        peaks["peak_cuda_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return peaks
