"""Metrics as JSON lines (one object per event) plus TensorBoard scalars, rank 0 only."""

from __future__ import annotations

import json
import time
from pathlib import Path

from zoo.atomic import atomic_open


class MetricsLog:
    def __init__(self, run_dir: Path, *, enabled: bool, tensorboard: bool) -> None:
        self.enabled = enabled
        self.path = Path(run_dir) / "metrics.jsonl"
        self.writer = None
        if enabled and tensorboard:
            from torch.utils.tensorboard import SummaryWriter  # imported lazily: slow import

            self.writer = SummaryWriter(str(Path(run_dir) / "tensorboard"))

    def write(self, split: str, step: int, metrics: dict[str, float]) -> None:
        if not self.enabled:
            return
        record = {"split": split, "step": step, "time": round(time.time(), 3), **metrics}
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")
        if self.writer is not None:
            for key, value in metrics.items():
                if isinstance(value, (int, float)):
                    self.writer.add_scalar(f"{split}/{key}", value, step)

    def drop_after(self, step: int) -> None:
        """Forget records past `step`: after a crash, the resumed run redoes those steps."""
        if not self.enabled or not self.path.is_file():
            return
        records = read_metrics(self.path.parent)
        kept = [r for r in records if r["step"] <= step]
        if len(kept) < len(records):
            with atomic_open(self.path) as f:
                f.write("".join(json.dumps(r) + "\n" for r in kept).encode())

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def read_metrics(run_dir: Path, split: str | None = None) -> list[dict]:
    """The records of RUN_DIR/metrics.jsonl (or of a .jsonl copy named directly), of one split."""
    path = Path(run_dir) if Path(run_dir).suffix == ".jsonl" else Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if split is None or r["split"] == split]
