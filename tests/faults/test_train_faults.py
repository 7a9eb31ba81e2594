"""Faults against the real training CLI, run as subprocesses (the runner's demo task, tiny):
SIGTERM then resume equals an uninterrupted run; kill -9 in the middle of a checkpoint write
leaves a loadable run that resumes exactly; bad inputs end with exit 2 and one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from zoo.train.checkpoint import load_checkpoint, step_checkpoints

TINY = [
    "--model.dim=32",
    "--model.ffn_dim=64",
    "--model.num_heads=4",
    "--model.encoder_layers=1",
    "--model.decoder_layers=1",
    "--model.dropout=0.2",
    "--data.batch_size=16",
    "--data.batches_per_epoch=7",
    "--train.log_every=1",
    "--train.progress=false",
    "--train.tensorboard=false",
    "--train.threads=1",
    "--optim.name=sgd",
    "--optim.lr=0.3",
    "--schedule.name=constant",
    "--schedule.warmup_steps=0",
]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}

# Runs the training CLI with torch.save replaced by one that writes half a file and then
# kills its own process with SIGKILL on the Nth call: a kill -9 exactly mid-write.
KILL_MID_WRITE = """
import os, runpy, signal, sys, torch
calls, real_save = 0, torch.save
def save(obj, f, *a, **k):
    global calls
    calls += 1
    if calls == int(os.environ["KILL_AT_SAVE"]):
        f.write(b"PK half a checkpoint"); f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    return real_save(obj, f, *a, **k)
torch.save = save
sys.argv = ["train"] + sys.argv[1:]
runpy.run_module("tasks.reverse.train", run_name="__main__")
"""


def train(out: Path, *extra: str, **kw) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tasks.reverse.train", *TINY, f"--train.out_dir={out}", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV, **kw)


def final_weights(run: Path) -> dict:
    return load_checkpoint(step_checkpoints(run / "checkpoints")[-1])["model"]


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("faults") / "whole"
    proc = train(out, "--train.max_steps=12")
    assert proc.returncode == 0, proc.stderr
    return out


def test_sigterm_saves_and_the_resumed_run_equals_an_uninterrupted_one(tmp_path, uninterrupted):
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "tasks.reverse.train",
        *TINY,
        f"--train.out_dir={out}",
        "--train.max_steps=100000",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    metrics = out / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not metrics.is_file() or metrics.read_text().count("\n") < 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM at step" in stderr and "Run the same command again" in stderr
    stopped_at = load_checkpoint(step_checkpoints(out / "checkpoints")[-1])["step"]
    assert stopped_at >= 3
    if stopped_at > 12:
        pytest.skip(f"the machine was too fast to stop before step 12 (stopped at {stopped_at})")
    resumed = train(out, "--train.max_steps=12")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stdout + resumed.stderr
    assert_same_weights(final_weights(out), final_weights(uninterrupted))


def test_kill_9_mid_checkpoint_write_leaves_a_run_that_resumes_exactly(tmp_path, uninterrupted):
    out = tmp_path / "run"
    args = [*TINY, f"--train.out_dir={out}", "--train.max_steps=12", "--train.save_every=2"]
    killed = subprocess.run(
        [sys.executable, "-c", KILL_MID_WRITE, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**ENV, "KILL_AT_SAVE": "3"},
    )
    assert killed.returncode == -signal.SIGKILL
    names = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert [n for n in names if not n.startswith(".")] == ["step_00000002.pt", "step_00000004.pt"]
    assert any(n.endswith(".partial") for n in names)  # the interrupted write, never renamed
    resumed = train(out, "--train.max_steps=12", "--train.save_every=2")
    assert resumed.returncode == 0, resumed.stderr
    assert not any(p.name.endswith(".partial") for p in (out / "checkpoints").iterdir())
    assert_same_weights(final_weights(out), final_weights(uninterrupted))


def test_restart_past_unreadable_checkpoints_keeps_the_valid_one(tmp_path):
    out = tmp_path / "run"
    assert train(out, "--train.max_steps=2").returncode == 0
    for step in (7, 8, 9):
        (out / "checkpoints" / f"step_{step:08d}.pt").write_bytes(b"not a checkpoint")
    resumed = train(out, "--train.max_steps=4", "--train.keep_last=1")
    assert resumed.returncode == 0, resumed.stderr
    names = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert "step_00000004.pt" in names and sum(n.endswith(".unreadable") for n in names) == 3


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--train.max_stepz=3"], "train.max_stepz"),
        (["--train.log_every=0"], "train.log_every"),
        (["--train.precision=fp8"], "train.precision"),
        (["--model.num_heads=5"], "num_heads"),
        (["--model.dropout=1.5"], "dropout"),
        (["--model.activation=swish"], "activation"),
        (["--config=/nonexistent/recipe.yaml"], "/nonexistent/recipe.yaml"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, extra, message):
    proc = train(tmp_path / "run", "--train.max_steps=1", *extra)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unwritable_run_directory_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = train(blocker / "run", "--train.max_steps=1")
    assert proc.returncode == 2 and "cannot be written" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


def test_changed_model_on_resume_names_the_keys(tmp_path):
    out = tmp_path / "run"
    assert train(out, "--train.max_steps=1").returncode == 0
    proc = train(out, "--train.max_steps=2", "--model.dim=64")
    assert proc.returncode == 2 and "model.dim (32 -> 64)" in proc.stderr
