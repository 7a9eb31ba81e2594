"""The peer benches under bench/ (`pytest bench --benchmark-only`) are not part of the test run,
which collects tests/ alone and never times anything: this checks that they still import and
parametrize, so a renamed API breaks here rather than in the next benchmark session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_peer_bench_collects():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "bench", "--collect-only", "-q", "-n0", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    collected = {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}
    assert collected == {f"bench/{path.name}" for path in (ROOT / "bench").glob("test_*.py")}
