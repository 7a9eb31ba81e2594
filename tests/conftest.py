"""Shared fixtures. Tests that read real data sets take `data_dir` and carry `@pytest.mark.data`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Parallel workers share the cores: one thread each, in this process and in the CLIs the
    # fault tests start (oversubscribed OpenMP threads made steps up to 200x slower here).
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared data directory: $ZOO_DATA_DIR, else ../shared/data beside the repository."""
    env = os.environ.get("ZOO_DATA_DIR")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(
            f"no data directory at {path} (from {'ZOO_DATA_DIR' if env else 'the default'}"
            "): set ZOO_DATA_DIR to the folder that holds multi30k/, cifar10/, ..."
        )
    return path
