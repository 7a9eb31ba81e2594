"""The GPT under FSDP2 (train.fsdp) on two gloo processes on the CPU, with and without activation
checkpointing: the losses and weights of one process on the joined batch, and a checkpoint whose
output projection is still the token embedding (tied, kept in the root unit)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tasks.gpt.config import GPTConfig, GPTDataConfig
from tasks.gpt.spec import GPTOptions, GPTSpec
from tasks.gpt.task import GPTTask
from tests.ranks import free_port, train_rank
from zoo.models.gpt import GPTModelConfig
from zoo.train import OptimConfig, ScheduleConfig, TrainConfig, fit, load_trained
from zoo.train.checkpoint import load_checkpoint, step_checkpoints
from zoo.train.metrics_log import read_metrics

pytestmark = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="needs torch.distributed with the gloo backend (two CPU processes)",
)

PER_RANK_BATCH = 4


def _recipe(out_dir: Path, *, fsdp: bool, batch_size: int, activation_checkpointing: bool) -> GPTConfig:
    """A two-layer GPT on the built-in corpus for three steps, fp32 without dropout. SGD without
    momentum, as the toy's exactness tests use: Adam's first steps move each weight by about lr
    times the sign of its gradient, so a gradient near 0 summed in another order could flip it."""
    return GPTConfig(
        model=GPTModelConfig(
            num_layers=2,
            dim=32,
            num_heads=2,
            max_len=16,
            dropout=0.0,
            attn_dropout=0.0,
            activation_checkpointing=activation_checkpointing,
        ),
        data=GPTDataConfig(
            synthetic_train=40,
            synthetic_valid=4,
            vocab_size=300,
            context=16,
            batch_size=batch_size,
            eval_limit=64,
            wikitext="",
        ),
        train=TrainConfig(
            out_dir=str(out_dir),
            max_steps=3,
            log_every=1,
            device="cpu",
            precision="fp32",
            fsdp=fsdp,
            clip_norm=1.0,
            threads=1,
            progress=False,
            tensorboard=False,
        ),
        optim=OptimConfig(name="sgd", lr=0.5, momentum=0.0),
        schedule=ScheduleConfig(name="constant", warmup_steps=0),
    )


def _last(run_dir: Path) -> dict:
    return load_checkpoint(step_checkpoints(run_dir / "checkpoints")[-1])


def _logged(run_dir: Path, key: str) -> list[float]:
    return [record[key] for record in read_metrics(run_dir, "train")]


@pytest.mark.parametrize("activation_checkpointing", [False, True], ids=["plain", "checkpointed"])
def test_two_process_fsdp_gpt_equals_one_process_on_the_joined_batch(activation_checkpointing, tmp_path):
    """An epoch's batches are consecutive groups of its block order and rank r takes groups r,
    r + 2, ... (zoo.data.batching.shard), so step k of the two ranks reads groups 2k and 2k + 1 of
    PER_RANK_BATCH blocks: one process's group k of twice as many. grad_norm (clipped on the first
    step) covers the tied weight's gradient, the sum of its embedding and projection terms."""
    two = tmp_path / "fsdp"
    sharded_cfg = _recipe(
        two, fsdp=True, batch_size=PER_RANK_BATCH, activation_checkpointing=activation_checkpointing
    )
    mp.spawn(train_rank, args=(2, free_port(), sharded_cfg, GPTTask), nprocs=2, join=True)
    one = tmp_path / "single"
    single_cfg = _recipe(
        one, fsdp=False, batch_size=2 * PER_RANK_BATCH, activation_checkpointing=activation_checkpointing
    )
    fit(single_cfg, GPTTask(single_cfg))

    assert max(_logged(one, "grad_norm")) > single_cfg.train.clip_norm  # clipping did act
    for key in ("loss", "grad_norm"):
        assert len(_logged(two, key)) == 3
        torch.testing.assert_close(_logged(two, key), _logged(one, key), rtol=1e-5, atol=1e-6)
    sharded, single = _last(two)["model"], _last(one)["model"]
    assert sharded.keys() == single.keys()
    for name, value in single.items():
        assert type(sharded[name]) is torch.Tensor  # plain, as an unsharded run saves them
        torch.testing.assert_close(sharded[name], value, rtol=1e-5, atol=1e-6)

    loaded = GPTSpec().load([load_trained(two, GPTConfig, which="last")], GPTOptions(run=str(two)))
    model = loaded.model
    assert model.output_weight is model.tokens.weight  # loading kept the tie
    torch.testing.assert_close(model.output_weight, sharded["tokens.weight"], rtol=0, atol=0)
