"""A tiny BERT recipe that trains in seconds."""

from __future__ import annotations

import pytest

from tasks.bert.config import BertPretrainingConfig, DataConfig
from zoo.models.bert import BertModelConfig
from zoo.train import OptimConfig, ScheduleConfig, TrainConfig


def tiny_recipe(out_dir: str, **data) -> BertPretrainingConfig:
    return BertPretrainingConfig(
        model=BertModelConfig(
            num_layers=1, dim=32, num_heads=2, ffn_dim=64, max_len=32, dropout=0.0, attn_dropout=0.0
        ),
        data=DataConfig(
            **{
                "synthetic_train": 40,
                "synthetic_valid": 10,
                "vocab_size": 200,
                "max_seq_length": 32,
                "batch_size": 4,
                "eval_batch_size": 16,
                "wikitext": "",
                **data,
            }
        ),
        train=TrainConfig(
            out_dir=out_dir, max_steps=2, log_every=1, threads=1, progress=False, tensorboard=False
        ),
        optim=OptimConfig(name="adamw", lr=1e-3, betas=[0.9, 0.999], eps=1e-6, weight_decay=0.01),
        schedule=ScheduleConfig(name="linear", warmup_steps=1),
    )


@pytest.fixture
def recipe(tmp_path) -> BertPretrainingConfig:
    return tiny_recipe(str(tmp_path / "run"))
