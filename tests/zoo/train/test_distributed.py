"""Two-process gloo DDP gives the parameters of one process on the joined batch."""

import copy

import torch
import torch.multiprocessing as mp
from toy import ToyTask

from tests.ranks import free_port, train_rank
from zoo.train import fit
from zoo.train.checkpoint import load_checkpoint, step_checkpoints


def test_two_process_ddp_equals_one_process_on_the_joined_batch(tiny_cfg, tmp_path):
    """With two loss terms of different units, accumulation and a rank-0-only evaluation."""
    cfg = tiny_cfg
    cfg.train.max_steps, cfg.two_terms, cfg.train.eval_every = 2, True, 1
    cfg.train.grad_accum = 2  # exercises no_sync on the first micro-batch
    single = copy.deepcopy(cfg)
    single.train.out_dir = str(tmp_path / "single")
    fit(single, ToyTask(single))

    ddp = copy.deepcopy(cfg)
    ddp.train.out_dir = str(tmp_path / "ddp")
    mp.spawn(train_rank, args=(2, free_port(), ddp, ToyTask), nprocs=2, join=True)

    one = load_checkpoint(step_checkpoints(tmp_path / "single" / "checkpoints")[-1])
    two = load_checkpoint(step_checkpoints(tmp_path / "ddp" / "checkpoints")[-1])
    assert len(two["rng"]) == 2  # each rank's RNG state is kept for exact resume
    for name, value in one["model"].items():
        torch.testing.assert_close(two["model"][name], value, rtol=1e-5, atol=1e-6)
