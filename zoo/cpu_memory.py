"""Large CPU tensors without page faults: freed memory kept by the process for its next tensors.

torch's CPU tensors come from malloc. glibc's malloc serves a large request (128 KiB, a threshold
it raises up to 32 MiB as such blocks are freed) with a fresh `mmap` and gives it back to the
kernel on `free`, and trims the top of its heap once the free memory there passes a threshold;
torch aligns its blocks to 64 bytes, so a freed block is often a little short of the next
request of its size. Every new activation tensor of a forward pass then costs one page fault per
4 KiB page it touches: a 25 MB tensor filled 20 times took 2,150 faults each time, and on a BERT
encoder of all-MiniLM-L6-v2's size (32 x 128 tokens, one thread, AMD EPYC Zen 4) the faults took
9% of the float32 forward and 12-18% of the int8 one (an exact GELU into a new 25 MB tensor ran
3x slower than into a reused one, torch.profiler). CTranslate2 keeps freed buffers in a caching
allocator of its own; Intel's launcher for torch on CPUs (`torch.backends.xeon.run_cpu`)
preloads jemalloc or tcmalloc for the same reason.

`fewer_page_faults()` sets three switches, as `THP_MEM_ALLOC_ENABLE=1 MALLOC_MMAP_MAX_=0
MALLOC_TRIM_THRESHOLD_=...` would from the environment: torch aligns blocks of 2 MB or more to
2 MB and asks for transparent huge pages for them (where the kernel grants them), and glibc serves
every block from its heap (no `mmap`) and does not trim it below 2 GiB of free memory. Together
the 25 MB tensor above takes no fault after the first. The cost: the process keeps its peak
memory until it exits. Every zoo command calls it (zoo.verbs.cli.run_verb), and so do the
benchmarks (bench/), for zoo and the peers in their process alike. It acts on the blocks torch
allocates after the call (torch reads its switch at its first large block: call it early).
`ZOO_MALLOC=system` leaves both allocators as they are; without glibc (macOS, musl) only torch's
switch is set.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

# mallopt's parameter numbers (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
# mallopt's largest value (an int): free memory at the heap's top is given back only past 2 GiB.
TRIM_ABOVE = 2**31 - 1


def fewer_page_faults() -> bool:
    """Huge-page-aligned large tensors, and glibc's malloc serving every size from a heap it keeps
    (module docstring); whether glibc took its settings (False under ZOO_MALLOC=system, where
    nothing is set, or without glibc)."""
    if os.environ.get("ZOO_MALLOC") == "system":
        return False
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):  # no C library found, or one without mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_ABOVE))
