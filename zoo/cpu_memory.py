"""Large CPU tensors from a heap the process keeps: glibc's malloc told not to return memory.

torch's CPU tensors come from malloc. glibc's malloc serves a large request (128 KiB, a threshold
it raises up to 32 MiB as such blocks are freed) with a fresh `mmap`, gives it back to the kernel
on `free`, and trims the top of its heap once the free memory there passes a threshold; memory
given back costs a page fault per 4 KiB page when it is touched again. CTranslate2 keeps freed
buffers in a caching allocator of its own; torch on the CPU has none, and Intel's launcher for
torch (`torch.backends.xeon.run_cpu`) preloads jemalloc or tcmalloc instead.

`fewer_page_faults()` sets glibc's own switches, as `MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=...`
would from the environment: every block from the heap (no `mmap`), and the heap not trimmed
below 2 GiB of free memory. Measured on and off on an AMD EPYC Zen 4, one thread
(docs/benchmarks.md, "Large CPU tensors"): a BERT encoder of all-MiniLM-L6-v2's size on 32 x 128
tokens, alone in its process, went from 0.95x to 1.10x CTranslate2's int8 speed (CTranslate2 under
the same switches); in processes that ran six workloads interleaved, zoo's steps gained 1.01-1.05x
and Hugging Face's and Marian's 1.16-1.42x (`python -m bench.cpu_memory`). The cost: the process
keeps its peak memory until it exits. Also asking torch to align large blocks to huge pages
(`THP_MEM_ALLOC_ENABLE`) was tried and dropped: it made some steps faster and others a third to a
half slower.

Every zoo command calls it (zoo.verbs.cli.run_verb), and so do the benchmarks (bench/), for zoo
and the peers alike. `ZOO_MALLOC=system` leaves malloc as it is; without glibc (macOS, musl)
nothing changes.
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
    """Tell glibc's malloc to serve every size from its heap and keep it (module docstring);
    whether it did (False under ZOO_MALLOC=system or without glibc)."""
    if os.environ.get("ZOO_MALLOC") == "system":
        return False
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):  # no C library found, or one without mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_ABOVE))
