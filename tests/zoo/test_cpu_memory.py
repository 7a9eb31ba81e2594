"""zoo.cpu_memory: after fewer_page_faults(), a large tensor made again and again reuses the
memory of the last one instead of faulting its pages in afresh; ZOO_MALLOC=system leaves the
allocators alone; every zoo command sets it before its work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.verbs import cli

ROOT = Path(__file__).resolve().parents[2]
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")

# Page faults per 25 MB tensor (6,144 pages of 4 KiB) made and freed 20 times, in a fresh process.
FAULTS = """
import resource, torch
from zoo.cpu_memory import fewer_page_faults
print(fewer_page_faults())
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
torch.empty(4096, 1536).fill_(1)
before = faults()
for _ in range(20):
    torch.empty(4096, 1536).fill_(1)
print((faults() - before) / 20)
"""


def faults_per_tensor(**env: str) -> tuple[bool, float]:
    done = subprocess.run(
        [sys.executable, "-c", FAULTS], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    took, faults = done.stdout.split()
    return took == "True", float(faults)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or "[never]" in (THP.read_text() if THP.exists() else "[never]"),
    reason="needs Linux with transparent huge pages available",
)
def test_a_large_tensor_made_again_reuses_the_last_ones_memory() -> None:
    took, faults = faults_per_tensor()
    if not took:
        pytest.skip("the C library is not glibc")
    assert faults < 100  # none after the first tensor, where the system allocator faults thousands

    took, faults = faults_per_tensor(ZOO_MALLOC="system")
    assert not took and faults > 1000  # left alone: every tensor's pages fault in afresh


def test_every_zoo_command_sets_it_before_its_work(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(cli, "fewer_page_faults", lambda: calls.append("set"))
    with pytest.raises(SystemExit) as exit_:
        cli.run_verb(cli.get_spec("translation"), "no-such-verb", [])
    assert exit_.value.code == 2 and calls == ["set"]
