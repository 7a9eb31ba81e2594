"""FSDP2 (train.fsdp) on two gloo processes on the CPU: the losses and weights of one process on
the joined batch, exact resume, and checkpoints that read as those of an unsharded run."""

import copy
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from torch import nn
from toy import ToyModel, ToyTask

from tests.ranks import free_port, train_rank
from zoo.config import UserError
from zoo.train import OptimConfig, fit
from zoo.train.checkpoint import load_checkpoint, load_weights, step_checkpoints
from zoo.train.fsdp import shard_units
from zoo.train.metrics_log import read_metrics


class BlockToyModel(ToyModel):
    """The toy model naming two units to shard besides the root (which keeps the embedding and
    the classifier)."""

    def shard_units(self) -> list[nn.Module]:
        return [self.hidden, self.tagger]


class BlockToyTask(ToyTask):
    def build_model(self) -> nn.Module:
        return BlockToyModel(self.cfg.data.vocab, self.cfg.dim, self.cfg.dropout)


def _train_two_processes(cfg, out_dir: Path) -> Path:
    cfg = copy.deepcopy(cfg)
    cfg.train.out_dir = str(out_dir)
    mp.spawn(train_rank, args=(2, free_port(), cfg, BlockToyTask), nprocs=2, join=True)
    return out_dir


def _train_one_process(cfg, out_dir: Path) -> Path:
    cfg = copy.deepcopy(cfg)
    cfg.train.out_dir = str(out_dir)
    fit(cfg, BlockToyTask(cfg))
    return out_dir


def _last(run_dir: Path) -> dict:
    return load_checkpoint(step_checkpoints(run_dir / "checkpoints")[-1])


def _logged(run_dir: Path, split: str, key: str) -> list[float]:
    return [record[key] for record in read_metrics(run_dir, split)]


def _assert_same_training(two: Path, one: Path, keys: tuple[str, ...] = ("loss",)) -> None:
    """The logged training `keys` and the final weights of two runs agree within 1e-5."""
    for key in keys:
        torch.testing.assert_close(
            _logged(two, "train", key), _logged(one, "train", key), rtol=1e-5, atol=1e-6
        )
    sharded, single = _last(two)["model"], _last(one)["model"]
    assert sharded.keys() == single.keys()
    for name, value in single.items():
        assert type(sharded[name]) is torch.Tensor  # plain, as an unsharded run saves them
        torch.testing.assert_close(sharded[name], value, rtol=1e-5, atol=1e-6)


def test_shard_units_are_the_models_own_or_the_items_of_its_outermost_module_lists():
    model = BlockToyModel(16, 8, 0.0)
    assert shard_units(model) == [model.hidden, model.tagger]
    stack = nn.Module()
    stack.layers = nn.ModuleList([nn.Sequential(nn.ModuleList([nn.Linear(2, 2)])), nn.Linear(2, 2)])
    stack.heads = nn.ModuleList([nn.Linear(2, 1)])
    assert shard_units(stack) == [*stack.layers, *stack.heads]  # not the list inside a layer
    assert shard_units(ToyModel(16, 8, 0.0)) == []  # the root alone is sharded


def test_two_process_fsdp_equals_one_process_on_the_joined_batch(tiny_cfg, tmp_path):
    """Two loss terms, accumulation (gradient sync off on the first micro-batch), clipping of
    sharded gradients, rank-0 evaluation and best.pt; the one-process run has train.fsdp on too,
    which one process ignores."""
    cfg = tiny_cfg
    cfg.train.max_steps, cfg.two_terms, cfg.train.eval_every, cfg.train.grad_accum = 3, True, 1, 2
    cfg.train.fsdp, cfg.train.clip_norm, cfg.train.best_metric = True, 1.0, "token_acc"
    one = _train_one_process(cfg, tmp_path / "single")
    two = _train_two_processes(cfg, tmp_path / "fsdp")

    assert max(_logged(one, "train", "grad_norm")) > cfg.train.clip_norm  # clipping did act
    _assert_same_training(two, one, ("loss", "grad_norm"))
    assert _logged(two, "valid", "token_acc") == _logged(one, "valid", "token_acc")
    single, sharded = _last(one), _last(two)
    assert len(sharded["rng"]) == 2
    assert sharded["optimizer"]["param_groups"] == single["optimizer"]["param_groups"]  # positional
    load_weights(ToyModel(cfg.data.vocab, cfg.dim, 0.0), sharded["model"], "fsdp")  # strict
    assert (two / "checkpoints" / "best.pt").is_file()


def test_a_resumed_fsdp_run_equals_an_uninterrupted_one_and_resumes_unsharded(tiny_cfg, tmp_path):
    """Adam's state and each rank's dropout stream cross the resume; the checkpoint then resumes
    in one process without FSDP (the optimizer state keeps torch.optim's layout)."""
    cfg = tiny_cfg
    cfg.train.fsdp, cfg.dropout, cfg.data.batches_per_epoch = True, 0.3, 3
    cfg.optim = OptimConfig(name="adamw", lr=1e-2, weight_decay=0.1)
    cfg.train.max_steps = 4
    whole = _train_two_processes(cfg, tmp_path / "whole")
    cfg.train.max_steps = 2
    _train_two_processes(cfg, tmp_path / "split")
    cfg.train.max_steps = 4
    split = _train_two_processes(cfg, tmp_path / "split")

    assert _logged(split, "train", "loss") == _logged(whole, "train", "loss")
    uninterrupted, resumed = _last(whole), _last(split)
    for name, value in uninterrupted["model"].items():
        torch.testing.assert_close(resumed["model"][name], value, rtol=0, atol=0)
    # The classifier, without gradients under one loss term, has no Adam state in either run.
    assert resumed["optimizer"]["state"].keys() == uninterrupted["optimizer"]["state"].keys()
    cfg.train.fsdp, cfg.train.max_steps = False, 5
    _train_one_process(cfg, split)
    assert _last(split)["step"] == 5


def test_a_compiled_fsdp_run_equals_one_eager_process(tiny_cfg, tmp_path):
    """torch.compile over the sharded model (dynamo skips FSDP's hooks and compiles between)."""
    cfg = tiny_cfg
    cfg.train.max_steps, cfg.train.grad_accum = 2, 2
    one = _train_one_process(cfg, tmp_path / "single")
    cfg.train.fsdp, cfg.train.compile = True, True
    two = _train_two_processes(cfg, tmp_path / "compiled")

    _assert_same_training(two, one)  # the same names too: no "_orig_mod." in them


def test_fsdp_refuses_an_ema_naming_the_keys(tiny_cfg):
    tiny_cfg.train.fsdp, tiny_cfg.train.ema_decay = True, 0.99
    with pytest.raises(UserError, match="'train.fsdp' and 'train.ema_decay'"):
        fit(tiny_cfg, ToyTask(tiny_cfg))
