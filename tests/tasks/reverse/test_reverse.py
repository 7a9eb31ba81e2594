"""The reverse demo: its batches, and a tiny model that learns through the real runner."""

import numpy as np
import torch

from tasks.reverse.config import ReverseConfig
from tasks.reverse.task import FIRST_SYMBOL, ReverseTask, make_pairs
from zoo.config import load_config
from zoo.data.special import SPECIAL_IDS
from zoo.train import fit


def test_targets_are_the_reversed_sources():
    cfg = ReverseConfig()
    batch = make_pairs(8, cfg, torch.Generator().manual_seed(0)).collate(np.arange(8), SPECIAL_IDS)
    for src, tgt_in, tgt_out in zip(batch.src.tolist(), batch.tgt_in.tolist(), batch.tgt_out.tolist()):
        symbols = src[: src.index(SPECIAL_IDS.eos)]
        assert min(symbols) >= FIRST_SYMBOL and cfg.data.min_len <= len(symbols) <= cfg.data.max_len
        n = len(symbols)
        assert tgt_in[: n + 1] == [SPECIAL_IDS.bos] + symbols[::-1]
        assert tgt_out[: n + 1] == symbols[::-1] + [SPECIAL_IDS.eos]
    assert batch.tgt_tokens == int((batch.tgt_out != SPECIAL_IDS.pad).sum())


def test_a_tiny_model_learns_to_reverse(tmp_path):
    cfg = load_config(
        ReverseConfig,
        None,
        [
            f"train.out_dir={tmp_path}",
            "train.max_steps=150",
            "train.eval_every=0",
            "train.progress=false",
            "train.tensorboard=false",
            "train.threads=1",
            "data.valid_size=128",
            "data.max_len=6",
            "model.encoder_layers=1",
            "model.decoder_layers=1",
            "optim.lr=3e-3",
        ],
    )
    result = fit(cfg, ReverseTask(cfg))
    assert result.metrics["token_acc"] > 0.9, result.metrics  # chance: 1 / 10 symbols
