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


def test_sigterm_saves_and_the_resumed_run_equals_an_uninterrupted_one(tmp_path):
    """The signal lands a few steps in, wherever the machine's speed puts it; the run resumed to
    4 steps past that equals one run that long without a stop."""
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
    steps = f"--train.max_steps={stopped_at + 4}"
    resumed = train(out, steps)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stdout + resumed.stderr
    whole = tmp_path / "whole"
    assert train(whole, steps).returncode == 0
    assert_same_weights(final_weights(out), final_weights(whole))


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
    # Junk of every kind torch fails on differently: KeyError ("hello"), EOFError (empty),
    # UnpicklingError ("not a checkpoint"), a zip cut short.
    whole = (out / "checkpoints" / "step_00000002.pt").read_bytes()
    junk = {7: b"hello", 8: b"", 9: b"not a checkpoint", 10: whole[: len(whole) // 2]}
    for step, data in junk.items():
        (out / "checkpoints" / f"step_{step:08d}.pt").write_bytes(data)
    resumed = train(out, "--train.max_steps=4", "--train.keep_last=1")
    assert resumed.returncode == 0, resumed.stderr
    assert "Traceback" not in resumed.stderr
    for step in junk:
        assert f"step_{step:08d}.pt.unreadable" in resumed.stdout  # each named as it is set aside
    assert "resumed from" in resumed.stdout and "step_00000002.pt at step 2" in resumed.stdout
    names = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert "step_00000004.pt" in names and sum(n.endswith(".unreadable") for n in names) == 4


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
        (["--config=/"], "a directory"),
        (["--train.max_steps=0"], "train.max_steps"),
        ([os.fsdecode(b"--train.best_metric=caf\xe9")], "not UTF-8"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, extra, message):
    proc = train(tmp_path / "run", "--train.max_steps=1", *extra)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run" / "config.yaml").exists()


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


def fingerprint(folder: Path) -> dict[str, bytes]:
    """Every file but the lock (which holds the pid of the last start) and its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_a_run_without_a_loadable_step_checkpoint_is_never_restarted(tmp_path):
    """Every step file unreadable: the first start refuses and sets them aside; the same command
    again must not start from step 0 (its first evaluation would overwrite best.pt)."""
    out = tmp_path / "run"
    assert train(out, "--train.max_steps=2").returncode == 0
    best = out / "checkpoints" / "best.pt"
    kept = best.read_bytes()
    (out / "checkpoints" / "step_00000002.pt").write_bytes(b"hello")  # torch: KeyError
    first = train(out, "--train.max_steps=4")
    assert first.returncode == 2 and "Traceback" not in first.stderr, first.stderr
    assert first.stderr.strip().count("\n") == 0
    assert "none of the 1 step checkpoints can be resumed" in first.stderr
    assert "step_00000002.pt.unreadable" in first.stdout and "not a checkpoint" in first.stdout
    before = fingerprint(out)
    again = train(out, "--train.max_steps=4")
    assert again.returncode == 2 and again.stderr.strip().count("\n") == 0, again.stderr
    for word in ("holds a run", "config.yaml", "best.pt", "1 *.unreadable", "--train.resume=false"):
        assert word in again.stderr, (word, again.stderr)
    assert fingerprint(out) == before and best.read_bytes() == kept
    over = train(out, "--train.max_steps=2", "--train.resume=false")
    assert over.returncode == 0, over.stderr
    (aside,) = out.glob("replaced-*")
    assert (aside / "checkpoints" / "best.pt").read_bytes() == kept


def test_a_text_file_or_an_unsafe_pickle_given_as_a_checkpoint_is_one_line(tmp_path):
    text = tmp_path / "notes.pt"
    text.write_text("these are notes, not weights\n")
    proc = subprocess.run(
        [sys.executable, "-m", "zoo", "evaluate", "reverse", str(text)],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert "not a checkpoint: a text file" in proc.stderr and "pickle" not in proc.stderr

    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    evil = tmp_path / "evil.pt"
    torch.save({"model": Evil()}, evil)
    proc = subprocess.run(
        [sys.executable, "-m", "zoo", "evaluate", "reverse", str(evil)],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "could run code" in proc.stderr and "system" in proc.stderr
    assert not marker.exists()


# The training CLI on a disk that fills up while a step checkpoint is written: the real write
# under torch.save raises OSError(ENOSPC), as a full disk does (torch reports it as a
# RuntimeError "file write failed" that never says why).
DISK_FULL = """
import errno, os, runpy, sys
real_fdopen = os.fdopen
class Full:
    def __init__(self, f): self.f = f
    def write(self, data): raise OSError(errno.ENOSPC, "No space left on device")
    def __getattr__(self, name): return getattr(self.f, name)
    def __enter__(self): return self
    def __exit__(self, *exc): return self.f.__exit__(*exc)
def fdopen(fd, *a, **k):
    f = real_fdopen(fd, *a, **k)
    return Full(f) if ".step_" in os.readlink(f"/proc/self/fd/{fd}") else f
os.fdopen = fdopen
sys.argv = ["train"] + sys.argv[1:]
runpy.run_module("tasks.reverse.train", run_name="__main__")
"""


def test_a_full_disk_says_so_in_one_line_and_keeps_the_checkpoints(tmp_path):
    out = tmp_path / "run"
    assert train(out, "--train.max_steps=2").returncode == 0
    step2 = (out / "checkpoints" / "step_00000002.pt").read_bytes()
    full = subprocess.run(
        [sys.executable, "-c", DISK_FULL, *TINY, f"--train.out_dir={out}", "--train.max_steps=4"],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr
    assert full.stderr.strip().count("\n") == 0 and "disk full" in full.stderr
    assert "step_00000004.pt" in full.stderr
    names = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert names == ["best.pt", "step_00000002.pt"]  # no partial file, nothing renamed
    assert (out / "checkpoints" / "step_00000002.pt").read_bytes() == step2
    assert load_checkpoint(out / "checkpoints" / "step_00000002.pt")["step"] == 2


def test_non_utf8_yaml_names_the_file_and_line(tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_bytes(b"train:\n  max_steps: 1\n  best_metric: caf\xe9\n")
    proc = train(tmp_path / "run", f"--config={recipe}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert f"{recipe}, line 3: not UTF-8" in proc.stderr


# Steps made slow (after the second), so both Ctrl-Cs land inside one step.
SLOW_STEPS = """
import runpy, sys, time
from tasks.reverse.task import ReverseTask
real, calls = ReverseTask.train_step, [0]
def train_step(self, model, batch):
    calls[0] += 1
    if calls[0] > 2:
        time.sleep(2)
    return real(self, model, batch)
ReverseTask.train_step = train_step
sys.argv = ["train"] + sys.argv[1:]
runpy.run_module("tasks.reverse.train", run_name="__main__")
"""


def test_a_second_ctrl_c_stops_at_once_in_one_line(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-c", SLOW_STEPS, *TINY, f"--train.out_dir={out}", "--train.max_steps=100"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    metrics = out / "metrics.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not metrics.is_file() or metrics.read_text().count("\n") < 2):
        time.sleep(0.05)
    time.sleep(0.3)  # inside the third, slow step
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGINT, stderr
    assert "Traceback" not in stderr and stderr.strip().count("\n") == 0, stderr
    assert "second Ctrl-C" in stderr


def test_a_start_that_fails_in_set_up_leaves_nothing_that_blocks_the_corrected_command(tmp_path):
    out = tmp_path / "run"
    failed = train(out, "--train.max_steps=1", "--model.dim=48", "--train.init_from=/nonexistent/run")
    assert failed.returncode == 2 and "/nonexistent/run" in failed.stderr, failed.stderr
    assert not (out / "config.yaml").exists()
    fixed = train(out, "--train.max_steps=1")  # another model.dim: nothing was trained with 48
    assert fixed.returncode == 0, fixed.stderr
    assert "dim: 48" not in (out / "config.yaml").read_text()


def test_where_data_is_read_from_and_how_much_is_evaluated_may_change_on_resume(tmp_path):
    out = tmp_path / "run"
    assert train(out, "--train.max_steps=1", "--data.valid_size=32").returncode == 0
    resumed = train(out, "--train.max_steps=2", "--data.valid_size=16")
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stdout
    refused = train(out, "--train.max_steps=3", "--data.num_symbols=9")
    assert refused.returncode == 2 and "data.num_symbols (10 -> 9)" in refused.stderr


def test_a_finished_runs_command_again_reports_the_same_result(tmp_path):
    out = tmp_path / "run"
    args = ("--train.max_steps=4", "--train.eval_every=2", "--data.valid_size=32")
    first = train(out, *args)
    assert first.returncode == 0, first.stderr
    summary = (out / "summary.json").read_text()
    again = train(out, *args)
    assert again.returncode == 0, again.stderr
    assert "nothing to train" in again.stdout

    def result_line(text: str) -> str:
        return next(line for line in text.splitlines() if line.startswith("held-out token accuracy"))

    assert result_line(again.stdout) == result_line(first.stdout)
    assert (out / "summary.json").read_text() == summary


def test_vit_data_moved_resumes_and_a_rerun_reports_the_figure_it_finished_with(tmp_path):
    """Moving the images, more DataLoader workers or a smaller evaluation do not block a resume;
    the finished run's command again prints the same test figure and keeps summary.json."""
    from clirun import VIT, write_images

    out = tmp_path / "run"
    images = write_images(tmp_path / "images")
    vit = [*VIT, f"--train.out_dir={out}", "--train.eval_every=1"]
    first = subprocess.run(
        [sys.executable, "-m", "tasks.vit.train", *vit, f"--data.path={images}"],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    moved = images.rename(tmp_path / "moved")
    args = [
        *vit,
        f"--data.path={moved}",
        "--data.num_workers=1",
        "--data.eval_batch_size=4",
        "--train.max_steps=3",
    ]

    def again() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "tasks.vit.train", *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=ENV,
        )

    resumed = again()
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stdout
    summary = (out / "summary.json").read_text()
    rerun = again()
    assert rerun.returncode == 0, rerun.stderr
    assert "nothing to train" in rerun.stdout

    def figure(text: str) -> str:
        return next(line for line in text.splitlines() if line.startswith("test top-1")).split("(")[0]

    assert figure(rerun.stdout) == figure(resumed.stdout)
    assert (out / "summary.json").read_text() == summary
