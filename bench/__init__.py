"""The benchmarks. They run with the zoo commands' allocator settings (zoo.cpu_memory), set here
before any tensor is made, so that zoo and the peers in its process allocate alike, and so does
CTranslate2 in the process of its own that bench.ct2_process starts (it imports bench too)."""

from zoo.cpu_memory import fewer_page_faults

fewer_page_faults()
