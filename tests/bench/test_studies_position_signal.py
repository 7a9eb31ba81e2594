"""bench.studies.position_signal: the sizes of token embeddings and positions, per checkpoint."""

import math

import pytest
import torch
import yaml

from bench.studies.position_signal import signal
from zoo.blocks.positions import sinusoidal_table


def write_run(run_dir, model_cfg, weights_per_step):
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"model": model_cfg}))
    for step, weights in weights_per_step.items():
        torch.save({"model": weights, "step": step}, run_dir / "checkpoints" / f"step_{step:08d}.pt")


def test_a_learned_table_is_read_from_each_checkpoint_and_padding_is_left_out(tmp_path):
    tokens = torch.full((5, 4), 0.5)
    tokens[0] = 100.0  # the padding row: not an embedding the model adds
    steps = {
        step: {"src_embed.tokens.weight": tokens, "src_embed.positions.weight": torch.full((16, 4), value)}
        for step, value in ((2, 0.1), (4, 0.3))
    }
    write_run(tmp_path, {"dim": 4, "positions": "learned"}, steps)
    records = signal(tmp_path, first=3)
    assert [r["step"] for r in records] == [2, 4]
    assert records[0]["token_rms"] == pytest.approx(0.5 * math.sqrt(4))
    assert [r["position_rms"] for r in records] == pytest.approx([0.1, 0.3])


def test_sinusoids_come_from_the_config_with_their_scale(tmp_path):
    write_run(tmp_path, {"dim": 8, "positions": "sinusoidal", "position_scale": 0.1},
              {1: {"src_embed.tokens.weight": torch.ones(3, 8)}})  # fmt: skip
    (record,) = signal(tmp_path, first=30)
    expected = 0.1 * sinusoidal_table(30, 8).pow(2).mean().sqrt().item()
    assert record["position_rms"] == pytest.approx(expected)
