"""Checkpoints never execute code on load, and a damaged newest file leaves older ones usable."""

import os
from pathlib import Path

import pytest
import torch

from zoo.config import UserError
from zoo.train.checkpoint import CheckpointManager, load_checkpoint, save_atomic


class Payload:
    """Unpickling this would create a file: proof that code ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_checkpoint_with_code_payload_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"model": {}, "step": 1, "extra": Payload(marker)}, path)
    with pytest.raises(UserError, match="refused"):
        load_checkpoint(path)
    assert not marker.exists()


def test_truncated_newest_checkpoint_leaves_previous_loadable(tmp_path):
    manager = CheckpointManager(tmp_path, keep_last=3)
    for step in (1, 2):
        manager.save({"model": {"w": torch.full((64, 64), float(step))}, "step": step}, step, None)
    newest = tmp_path / "step_00000002.pt"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    with pytest.raises(UserError, match="step_00000002.pt"):
        load_checkpoint(newest)
    path, state = manager.latest_valid()
    assert path.name == "step_00000001.pt" and state["step"] == 1
    assert torch.equal(state["model"]["w"], torch.ones(64, 64))


def test_crash_while_writing_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    save_atomic({"step": 1}, path)

    def crash(obj, f):
        f.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        save_atomic({"step": 2}, path)
    monkeypatch.undo()
    assert load_checkpoint(path)["step"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]  # no temp file left behind


def test_rotation_keeps_last_k_and_best(tmp_path):
    manager = CheckpointManager(tmp_path, keep_last=2, best_metric="acc", best_mode="max")
    state: dict = {"step": 0}
    for step, acc in enumerate([0.5, 0.9, 0.7, 0.6], start=1):
        state["step"] = step
        manager.save(state, step, {"acc": acc})
    assert sorted(p.name for p in tmp_path.glob("step_*.pt")) == ["step_00000003.pt", "step_00000004.pt"]
    assert load_checkpoint(tmp_path / "best.pt")["step"] == 2
