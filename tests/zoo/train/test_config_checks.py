"""The runner's sections are checked when the config is read: a value torch would reject (or take
silently and misbehave with) is one line naming its key, before any work starts; train.best_metric,
which only the task's first evaluation can check, stops the run there with its step saved."""

from pathlib import Path

import pytest
import torch
from toy import ToyTask

from tests.faults.clirun import GPT, assert_refused, run
from zoo.config import ConfigError, UserError, load_config
from zoo.train import RunConfig, fit
from zoo.train.checkpoint import step_checkpoints
from zoo.train.config import OPTIMIZERS
from zoo.train.metrics_log import read_metrics
from zoo.train.optim import build_optimizer
from zoo.train.schedules import SCHEDULES, build_schedule

GPT = [*GPT, "--train.max_steps=1"]  # the tiny GPT of the fault tests, one step: evaluated at step 1

BAD = [
    ("--optim.lr=-1", "optim.lr"),
    ("--optim.eps=-1", "optim.eps"),
    ("--optim.eps=0", "optim.eps"),
    ("--optim.betas=[1.5,2]", "optim.betas"),
    ("--optim.betas=[0.9,1]", "optim.betas"),
    ("--optim.betas=[-0.1,0.9]", "optim.betas"),
    ("--optim.betas=[0.9]", "optim.betas"),
    ("--optim.weight_decay=-1", "optim.weight_decay"),
    ("--optim.momentum=1", "optim.momentum"),
    ("--optim.momentum=-0.5", "optim.momentum"),
    ("--optim.name=lion", "optim.name"),
    ("--train.ema_decay=1.5", "train.ema_decay"),
    ("--train.ema_decay=1", "train.ema_decay"),
    ("--train.ema_decay=-0.1", "train.ema_decay"),
    ("--train.clip_norm=-1", "train.clip_norm"),
    ("--schedule.warmup_steps=-5", "schedule.warmup_steps"),
    ("--schedule.cooldown_steps=-1", "schedule.cooldown_steps"),
    ("--schedule.min_lr_ratio=1.5", "schedule.min_lr_ratio"),
    ("--schedule.min_lr_ratio=-0.1", "schedule.min_lr_ratio"),
    ("--schedule.name=step", "schedule.name"),
]


@pytest.mark.parametrize(("override", "key"), BAD, ids=[o for o, _ in BAD])
def test_a_bad_optimizer_or_schedule_value_is_refused_when_read(override, key):
    with pytest.raises(ConfigError, match=rf"^key '{key}': ") as err:
        load_config(RunConfig, overrides=[override])
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "overrides",
    [
        ["--train.clip_norm=0", "--train.ema_decay=0", "--schedule.warmup_steps=0", "--optim.lr=0"],  # offs
        ["--train.ema_decay=0.9999", "--optim.betas=[0,0.999]", "--optim.weight_decay=0"],
        ["--schedule.min_lr_ratio=0", "--schedule.cooldown_steps=0", "--optim.momentum=0"],
        ["--schedule.min_lr_ratio=1", "--optim.name=sgd", "--optim.betas=[]"],  # sgd has no betas
    ],
)
def test_documented_values_are_accepted(overrides):
    load_config(RunConfig, overrides=overrides)


def test_every_name_the_config_accepts_builds_its_optimizer_and_schedule():
    model = torch.nn.Linear(2, 2)
    for name in OPTIMIZERS:
        optimizer = build_optimizer(model, load_config(RunConfig, overrides=[f"optim.name={name}"]).optim)
        assert type(optimizer).__name__.lower() == name
    for name in SCHEDULES:
        build_schedule(optimizer, load_config(RunConfig, overrides=[f"schedule.name={name}"]).schedule, 10)


def test_a_config_built_in_code_is_checked_by_the_runner_before_any_work(tiny_cfg):
    """load_config checks what it reads; fit checks again what code built without it."""
    tiny_cfg.optim.lr = -1.0
    with pytest.raises(UserError, match=r"^key 'optim\.lr': must be at least 0, not -1\.0$"):
        fit(tiny_cfg, ToyTask(tiny_cfg))
    assert not Path(tiny_cfg.train.out_dir).exists()


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("--optim.lr=-1", "optim.lr"),  # was torch's ValueError traceback, the folder left behind
        ("--schedule.warmup_steps=-5", "schedule.warmup_steps"),  # was trained with, silently
    ],
)
def test_the_cli_refuses_a_bad_optimizer_value_before_touching_the_run_directory(tmp_path, override, key):
    out = tmp_path / "run"
    assert_refused(run("zoo", "train", "gpt", *GPT, f"--train.out_dir={out}", override), f"key '{key}'")
    assert not out.exists()


def test_a_best_metric_the_task_never_reports_stops_at_the_first_evaluation(tiny_cfg):
    tiny_cfg.train.best_metric, tiny_cfg.train.eval_every = "bleu", 2
    with pytest.raises(UserError, match="^key 'train.best_metric': .*'bleu'.*token_acc") as err:
        fit(tiny_cfg, ToyTask(tiny_cfg))
    assert "\n" not in str(err.value)
    run_dir = Path(tiny_cfg.train.out_dir)
    # stopped at step 2, which is saved; the corrected command resumes and finishes with a best.pt
    assert [p.name for p in step_checkpoints(run_dir / "checkpoints")] == ["step_00000002.pt"]
    tiny_cfg.train.best_metric = "token_acc"
    assert fit(tiny_cfg, ToyTask(tiny_cfg)).step == 4
    assert [r["step"] for r in read_metrics(run_dir, "valid")] == [4]
    assert (run_dir / "checkpoints" / "best.pt").is_file()


def test_the_cli_names_best_metric_and_the_metrics_the_task_reports(tmp_path):
    out = tmp_path / "run"
    result = run("zoo", "train", "gpt", *GPT, f"--train.out_dir={out}", "--train.best_metric=bleu")
    assert_refused(result, "key 'train.best_metric'", "'bleu'", "loss", "ppl")
    assert (out / "checkpoints" / "step_00000001.pt").is_file()  # the step trained is kept
    assert not (out / "checkpoints" / "best.pt").exists()
