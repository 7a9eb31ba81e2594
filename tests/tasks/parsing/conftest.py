"""A tiny parser recipe and a handful of trees for the parsing tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from nltk import Tree

from tasks.parsing import train
from tasks.parsing.config import DataConfig, ParserModelConfig, ParsingConfig
from tasks.parsing.grammar import grammar_treebank
from zoo.train import OptimConfig, ScheduleConfig, TrainConfig


def tiny_config(kind: str, out_dir: str, steps: int) -> ParsingConfig:
    """One-layer parser, constant learning rate, no dropout and no <unk> replacement: a
    handful of trees can be learned by heart in seconds."""
    cfg = ParsingConfig()
    own = dict(char_dim=16, label_hidden=64) if kind == "chart" else dict(decoder_layers=1)
    cfg.model = ParserModelConfig(
        kind=kind, encoder_layers=1, dim=64, ffn_dim=128, num_heads=2, dropout=0.0, max_len=256, **own
    )
    cfg.data = DataConfig(source="grammar", grammar_sizes=[8, 4, 4], max_tokens=400, unk_prob=0.0)
    cfg.decode.beam_size = 3
    cfg.label_smoothing = 0.0
    cfg.train = TrainConfig(
        out_dir=out_dir,
        max_steps=steps,
        log_every=steps,
        progress=False,
        tensorboard=False,
        threads=1,
        best_metric="f1",
    )
    cfg.optim = OptimConfig(name="adam", lr=3e-3, betas=[0.9, 0.98])
    cfg.schedule = ScheduleConfig(name="constant", warmup_steps=0)
    return cfg


@pytest.fixture(scope="session")
def handful() -> dict[str, list[Tree]]:
    """Eight short grammar trees as train, dev and test (to be learned by heart)."""
    trees = [t for t in grammar_treebank(5, (200, 0, 0))["train"] if len(t.leaves()) <= 12][:8]
    return {"train": trees, "dev": trees, "test": trees}


def tiny_chart_run(out: Path, *extra: str) -> Path:
    """A chart parser trained 4 steps on 40 grammar trees through the train CLI (seconds)."""
    train.main(
        [
            f"--train.out_dir={out}",
            "--train.max_steps=4",
            "--train.eval_every=0",
            "--train.save_every=0",
            "--train.progress=false",
            "--train.tensorboard=false",
            "--train.threads=1",
            "--data.grammar_sizes=[40,5,5]",
            "--model.dim=32",
            "--model.ffn_dim=64",
            "--model.encoder_layers=1",
            *extra,
        ]
    )
    return out
