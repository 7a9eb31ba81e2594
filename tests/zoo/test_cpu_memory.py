"""zoo.cpu_memory: after fewer_page_faults(), a tensor larger than glibc's largest mmap threshold
comes from the process's heap (where freed memory stays), not from a mapping of its own that
free gives back; ZOO_MALLOC=system leaves malloc alone; every zoo command sets it before its work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.verbs import cli

ROOT = Path(__file__).resolve().parents[2]

# Whether a 64 MB tensor (above the 32 MiB that glibc's mmap threshold can rise to) lies in the
# [heap] mapping of /proc/self/maps, in a fresh process.
WHERE = """
import torch
from zoo.cpu_memory import fewer_page_faults
took = fewer_page_faults()
tensor = torch.empty(16 * 2**20)  # kept alive: freed, a mapping of its own would be gone
address = tensor.data_ptr()
for line in open("/proc/self/maps"):
    span, *rest = line.split()
    low, high = (int(end, 16) for end in span.split("-"))
    if low <= address < high:
        print(took, line.rstrip().endswith("[heap]"))
"""


def tensor_in_heap(**env: str) -> tuple[bool, bool]:
    done = subprocess.run(
        [sys.executable, "-c", WHERE], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    took, in_heap = done.stdout.split()
    return took == "True", in_heap == "True"


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
def test_a_large_tensor_comes_from_the_heap_the_process_keeps() -> None:
    took, in_heap = tensor_in_heap()
    if not took:
        pytest.skip("the C library is not glibc")
    assert in_heap

    assert tensor_in_heap(ZOO_MALLOC="system") == (False, False)  # left alone: a mapping of its own


def test_every_zoo_command_sets_it_before_its_work(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(cli, "fewer_page_faults", lambda: calls.append("set"))
    with pytest.raises(SystemExit) as exit_:
        cli.run_verb(cli.get_spec("translation"), "no-such-verb", [])
    assert exit_.value.code == 2 and calls == ["set"]
