"""A run directory holds one run: resumed with a compatible config or refused, replaced only when
asked (and then moved aside), locked while used, cleaned of interrupted writes; evaluation runs
after the save of its step."""

import copy
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from toy import ToyTask

from zoo.config import UserError
from zoo.train import fit
from zoo.train.checkpoint import load_checkpoint, step_checkpoints
from zoo.train.metrics_log import MetricsLog, read_metrics
from zoo.train.rundir import RunDirectory, frozen_differences

HERE = Path(__file__).parent


def test_resume_with_other_model_or_data_settings_names_the_keys(tiny_cfg):
    fit(tiny_cfg, ToyTask(tiny_cfg))
    changed = copy.deepcopy(tiny_cfg)
    changed.dim, changed.data.vocab = 64, 20
    with pytest.raises(UserError, match=r"data\.vocab \(16 -> 20\)"):
        fit(changed, ToyTask(changed))


def test_a_run_of_another_recipe_is_refused_listing_a_few_keys_and_counting_the_rest(tmp_path):
    """Resuming into another task's run: nearly every key differs; the line names five."""
    saved = "model:\n" + "".join(f"  k{i}: {i}\n" for i in range(9))
    directory = RunDirectory(tmp_path / "run")
    directory.prepare(saved, resume=True)
    directory.write_config(saved)
    (directory.checkpoints / "step_00000001.pt").parent.mkdir(parents=True, exist_ok=True)
    (directory.checkpoints / "step_00000001.pt").write_bytes(b"")
    directory.release()
    other = saved.replace(": ", ": 1")  # every value changed
    with pytest.raises(UserError) as refused:
        RunDirectory(tmp_path / "run").prepare(other, resume=True)
    message = str(refused.value)
    assert "model.k0 (0 -> 10); model.k1 (1 -> 11)" in message and "model.k5" not in message
    assert "; and 4 more (a run of another recipe or task?)" in message and "\n" not in message


def test_schedule_and_step_budget_may_change_on_resume():
    saved = "train:\n  max_steps: 4\n  seed: 0\nschedule:\n  warmup_steps: 10\nmodel:\n  dim: 8\n"
    longer = saved.replace("max_steps: 4", "max_steps: 40").replace("warmup_steps: 10", "warmup_steps: 3")
    assert frozen_differences(saved, longer) == []
    assert frozen_differences(saved, saved.replace("seed: 0", "seed: 1")) == ["train.seed (0 -> 1)"]
    assert frozen_differences(saved, saved.replace("dim: 8", "dim: 9")) == ["model.dim (8 -> 9)"]


def test_resume_false_moves_the_old_run_aside(tiny_cfg):
    first = fit(tiny_cfg, ToyTask(tiny_cfg))
    old_best = load_checkpoint(step_checkpoints(first.run_dir / "checkpoints")[-1])
    again = copy.deepcopy(tiny_cfg)
    again.train.resume, again.dim = False, 48  # a new model is fine once the old run is away
    fit(again, ToyTask(again))
    aside = list(first.run_dir.glob("replaced-*"))
    assert len(aside) == 1
    moved = load_checkpoint(step_checkpoints(aside[0] / "checkpoints")[-1])
    assert moved["step"] == old_best["step"] and moved["config"] == old_best["config"]
    assert "dim: 48" in (first.run_dir / "config.yaml").read_text()


def test_a_second_run_on_the_same_directory_is_refused(tiny_cfg):
    holder = RunDirectory(tiny_cfg.train.out_dir)
    holder.prepare("train: {}\n", resume=True)
    try:
        cmd = [
            sys.executable,
            str(HERE / "toy.py"),
            f"--train.out_dir={tiny_cfg.train.out_dir}",
            "--train.progress=false",
            "--train.tensorboard=false",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        holder.release()
    assert proc.returncode == 2 and "is in use by pid" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


def test_partial_writes_are_cleaned_at_the_next_start(tiny_cfg):
    run = Path(tiny_cfg.train.out_dir)
    (run / "checkpoints").mkdir(parents=True)
    leftover = run / "checkpoints" / ".step_00000009.pt.abc123.partial"
    leftover.write_bytes(b"half")
    fit(tiny_cfg, ToyTask(tiny_cfg))
    assert not leftover.exists()


def test_unwritable_run_directory_is_named(tiny_cfg, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    tiny_cfg.train.out_dir = str(blocker / "run")
    with pytest.raises(UserError, match="cannot be written"):
        fit(tiny_cfg, ToyTask(tiny_cfg))


def test_invalid_train_values_are_named_before_any_work(tiny_cfg):
    tiny_cfg.train.log_every = 0
    with pytest.raises(UserError, match="train.log_every"):
        fit(tiny_cfg, ToyTask(tiny_cfg))
    assert not Path(tiny_cfg.train.out_dir).exists()


class FailingEvaluation(ToyTask):
    def evaluate(self, model):
        raise UserError("validation sentence 7 is longer than the position table")


def test_a_failing_evaluation_leaves_its_step_saved(tiny_cfg):
    tiny_cfg.train.eval_every, tiny_cfg.train.max_steps = 2, 4
    with pytest.raises(UserError, match="evaluation at step 2 failed .*step_00000002.pt"):
        fit(tiny_cfg, FailingEvaluation(tiny_cfg))
    assert load_checkpoint(Path(tiny_cfg.train.out_dir) / "checkpoints" / "step_00000002.pt")["step"] == 2


def test_metrics_of_lost_steps_are_dropped_on_resume(tmp_path):
    log = MetricsLog(tmp_path, enabled=True, tensorboard=False)
    for step in range(1, 6):
        log.write("train", step, {"loss": 1.0})
    log.drop_after(3)
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3]


def test_best_survives_a_crash_between_the_step_save_and_evaluation(tiny_cfg):
    """best.pt is newer than the step file it follows; resume must not forget its value."""
    tiny_cfg.train.best_metric, tiny_cfg.train.eval_every = "token_acc", 2
    fit(tiny_cfg, ToyTask(tiny_cfg))
    run = Path(tiny_cfg.train.out_dir)
    best = load_checkpoint(run / "checkpoints" / "best.pt")["best"]
    step_file = step_checkpoints(run / "checkpoints")[-1]
    state = load_checkpoint(step_file)
    state["best"] = None  # as written before the evaluation of its step
    import torch

    torch.save(state, step_file)

    class Worse(ToyTask):
        def evaluate(self, model):
            return {"token_acc": -1.0}

    tiny_cfg.train.max_steps = 6
    fit(tiny_cfg, Worse(tiny_cfg))
    assert load_checkpoint(run / "checkpoints" / "best.pt")["best"] == best


def test_a_failed_set_up_leaves_the_directory_free(tiny_cfg):
    class FailingSetup(ToyTask):
        def setup(self, run):
            raise UserError("data: no such file")

    with pytest.raises(UserError, match="no such file"):
        fit(tiny_cfg, FailingSetup(tiny_cfg))
    fit(tiny_cfg, ToyTask(tiny_cfg))  # in the same process: the lock was released


@dataclass
class WhereData:
    path: str = field(default="", metadata={"resume": "may change"})
    num_workers: int = field(default=0, metadata={"resume": "may change"})
    batch_size: int = 8


@dataclass
class WhereModel:
    dim: int = 4


@dataclass
class WhereConfig:
    data: WhereData = field(default_factory=WhereData)
    model: WhereModel = field(default_factory=WhereModel)


def test_keys_marked_may_change_are_free_on_resume():
    from zoo.train.rundir import may_change_on_resume

    free = may_change_on_resume(WhereConfig())
    assert free == {"data.path", "data.num_workers"}
    saved = "data:\n  path: /old\n  num_workers: 0\n  batch_size: 8\n"
    moved = "data:\n  path: /new\n  num_workers: 4\n  batch_size: 8\n"
    assert frozen_differences(saved, moved, free) == []
    assert frozen_differences(saved, moved.replace("batch_size: 8", "batch_size: 9"), free) == [
        "data.batch_size (8 -> 9)"
    ]


def test_a_directory_with_best_pt_but_no_step_checkpoint_is_refused(tiny_cfg):
    fit(tiny_cfg, ToyTask(tiny_cfg))
    run = Path(tiny_cfg.train.out_dir)
    for path in step_checkpoints(run / "checkpoints"):
        path.unlink()
    (run / "checkpoints" / "best.pt").write_bytes(b"kept")
    with pytest.raises(UserError, match="holds a run .*no step checkpoint.*--train.resume=false"):
        fit(tiny_cfg, ToyTask(tiny_cfg))
    assert (run / "checkpoints" / "best.pt").read_bytes() == b"kept"


def test_a_run_that_saved_no_checkpoint_starts_anew(tmp_path, capsys):
    """Killed before its first checkpoint: nothing trained to lose, so the same command runs."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    directory = RunDirectory(run)
    assert directory.prepare("seed: 1\n", resume=True) == "new"
    directory.release()
    assert "saved no checkpoint" in capsys.readouterr().out
