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
        manager.save(resumable(step, w=torch.full((64, 64), float(step))), step)
    newest = tmp_path / "step_00000002.pt"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    with pytest.raises(UserError, match="step_00000002.pt"):
        load_checkpoint(newest)
    path, state = manager.latest_valid()
    assert path.name == "step_00000001.pt" and state["step"] == 1
    assert torch.equal(state["model"]["w"], torch.ones(64, 64))
    assert (tmp_path / "step_00000002.pt.unreadable").is_file()  # kept for inspection


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


def resumable(step: int, **weights) -> dict:
    return {
        "model": weights,
        "optimizer": {},
        "scheduler": {},
        "step": step,
        "position": {},
        "rng": [],
        "config": "",
    }


def test_rotation_keeps_the_last_k(tmp_path):
    manager = CheckpointManager(tmp_path, keep_last=2)
    for step in range(1, 5):
        manager.save(resumable(step), step)
    assert sorted(p.name for p in tmp_path.glob("step_*.pt")) == ["step_00000003.pt", "step_00000004.pt"]


def test_restarts_past_unreadable_checkpoints_never_delete_a_valid_one(tmp_path):
    """Broken newer files once made rotation delete every good checkpoint."""
    manager = CheckpointManager(tmp_path, keep_last=2)
    manager.save(resumable(1), 1)
    for step in (2, 3, 4):  # newer but unreadable (a disk error, a foreign file)
        (tmp_path / f"step_{step:08d}.pt").write_bytes(b"garbage")
    path, _ = manager.latest_valid()
    assert path.name == "step_00000001.pt"
    manager.save(resumable(2), 2)  # the resumed run writes its next checkpoint
    assert sorted(p.name for p in tmp_path.glob("step_*.pt")) == ["step_00000001.pt", "step_00000002.pt"]


def test_a_file_that_cannot_be_resumed_is_set_aside(tmp_path):
    manager = CheckpointManager(tmp_path, keep_last=3)
    manager.save(resumable(1), 1)
    save_atomic({"model": {}, "config": "", "step": 2}, tmp_path / "step_00000002.pt")  # an average
    path, _ = manager.latest_valid()
    assert path.name == "step_00000001.pt"
    assert (tmp_path / "step_00000002.pt.unreadable").is_file()


def test_no_resumable_checkpoint_is_an_error_not_a_fresh_start(tmp_path):
    (tmp_path / "step_00000005.pt").write_bytes(b"garbage")
    with pytest.raises(UserError, match="none of the 1 step checkpoints"):
        CheckpointManager(tmp_path, keep_last=2).latest_valid()


def test_full_disk_is_named(tmp_path, monkeypatch):
    def full(obj, f):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(UserError, match="disk full"):
        save_atomic({"step": 1}, tmp_path / "x.pt")


@pytest.mark.parametrize(
    "data, words",
    [
        (b"hello", "a text file"),  # torch's unpickler raises KeyError
        (b"", "empty"),
        (b"PK\x03\x04 half", "truncated or corrupt"),
        (b"\x80\x04\x95 some pickle", "neither a torch zip archive nor a torch pickle"),
    ],
)
def test_every_unloadable_file_is_one_user_error(tmp_path, data, words):
    path = tmp_path / "step_00000001.pt"
    path.write_bytes(data)
    with pytest.raises(UserError, match=words) as caught:
        load_checkpoint(path)
    assert "\n" not in str(caught.value)
