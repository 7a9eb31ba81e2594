"""The one loader of trained models: which checkpoint, EMA preferred, strict, task-checked,
self-contained (artifacts travel inside), and the averaging verb."""

import subprocess
import sys
from dataclasses import dataclass

import pytest
import torch
from toy import ToyConfig, ToyTask

from zoo.config import UserError
from zoo.train import fit, load_trained
from zoo.train.checkpoint import load_checkpoint, step_checkpoints


class WithTokenizer(ToyTask):
    def artifacts(self):
        return {"vocab.txt": b"[PAD]\nhello\n"}


def test_ema_weights_are_preferred_and_artifacts_travel(tiny_cfg):
    tiny_cfg.train.ema_decay = 0.5
    result = fit(tiny_cfg, WithTokenizer(tiny_cfg))
    trained = load_trained(result.run_dir, ToyConfig)
    assert trained.ema and trained.step == tiny_cfg.train.max_steps
    assert trained.artifacts == {"vocab.txt": b"[PAD]\nhello\n"}
    model = trained.load_into(ToyTask(trained.cfg).build_model())
    for name, value in result.model.state_dict().items():
        assert torch.equal(model.state_dict()[name], value)  # the evaluated (EMA) weights


def test_best_falls_back_to_last_and_last_is_the_newest(tiny_cfg, capsys):
    tiny_cfg.train.save_every = 2
    result = fit(tiny_cfg, ToyTask(tiny_cfg))
    assert load_trained(result.run_dir, ToyConfig).path.name == "step_00000004.pt"
    out, err = capsys.readouterr()
    assert "no best.pt" in err and "no best.pt" not in out  # stdout is kept for --json records
    assert load_trained(result.run_dir, ToyConfig, which="last").path.name == "step_00000004.pt"


def test_checkpoint_of_another_task_is_refused_in_one_line(tiny_cfg):
    @dataclass
    class OtherConfig:
        width: int = 3

    result = fit(tiny_cfg, ToyTask(tiny_cfg))
    with pytest.raises(UserError, match="a checkpoint of toy.ToyConfig, not of .*OtherConfig"):
        load_trained(result.run_dir, OtherConfig)


def test_weights_that_do_not_fit_name_the_file_and_keys(tiny_cfg):
    result = fit(tiny_cfg, ToyTask(tiny_cfg))
    trained = load_trained(result.run_dir, ToyConfig)
    trained.cfg.dim = 8
    with pytest.raises(
        UserError, match=r"step_00000004.pt: weights do not fit.*shape mismatch: embed.weight"
    ):
        trained.load_into(ToyTask(trained.cfg).build_model())


def test_overrides_change_the_recipe_but_never_the_model(tiny_cfg):
    result = fit(tiny_cfg, ToyTask(tiny_cfg))
    assert load_trained(result.run_dir, ToyConfig, overrides=["--data.batch_size=3"]).cfg.data.batch_size == 3
    with pytest.raises(UserError, match="model comes from the checkpoint"):
        load_trained(result.run_dir, ToyConfig, overrides=["model.dim=3"])


def test_average_verb_writes_a_loadable_mean(tiny_cfg):
    tiny_cfg.train.save_every, tiny_cfg.train.keep_last = 1, 3
    result = fit(tiny_cfg, WithTokenizer(tiny_cfg))
    proc = subprocess.run(
        [sys.executable, "-m", "zoo.train.average", str(result.run_dir), "--last", "2", "--force"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    steps = [load_checkpoint(p)["model"] for p in step_checkpoints(result.run_dir / "checkpoints")[-2:]]
    trained = load_trained(result.run_dir, ToyConfig, which="averaged")
    torch.testing.assert_close(
        trained.weights["tagger.weight"], (steps[0]["tagger.weight"] + steps[1]["tagger.weight"]) / 2
    )
    assert trained.artifacts == {"vocab.txt": b"[PAD]\nhello\n"}
    bad = subprocess.run(
        [sys.executable, "-m", "zoo.train.average", str(result.run_dir), "--last", "9"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "fewer than --last 9" in bad.stderr
