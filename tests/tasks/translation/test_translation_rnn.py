"""The translation task with the recurrent baseline (model.arch=rnn): its recipe, the train
command end to end, and a bad arch refused in one line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.translation import train
from tasks.translation.config import TranslationConfig
from zoo.config import load_config

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "translation"


def test_rnn_recipe_is_the_multi30k_recipes_data_and_batches():
    rnn = load_config(TranslationConfig, CONFIGS / "multi30k_rnn.yaml")
    transformer = load_config(TranslationConfig, CONFIGS / "multi30k.yaml")
    assert (rnn.model.arch, transformer.model.arch) == ("rnn", "transformer")
    assert rnn.data == transformer.data and rnn.label_smoothing == transformer.label_smoothing


def test_train_command_trains_decodes_and_scores_a_recurrent_model(tmp_path):
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "tasks.translation.train", "--model.arch=rnn", "--model.cell=lstm",
        "--model.dim=32", "--model.rnn_dim=32", "--train.max_steps=3", f"--train.out_dir={out}",
        "--train.progress=false", "--train.tensorboard=false", "--train.threads=1",
        "--data.synthetic_train=200", "--data.synthetic_valid=8", "--data.synthetic_test=8",
        "--data.vocab_size=200", "--decode.max_len_b=5",
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "test.json").read_text())["step"] == 3
    valid = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in valid if r["split"] == "valid"] == [3]


def test_an_unknown_arch_is_one_line_naming_the_key(capsys):
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--model.arch=lstm"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "model.arch" in error and "\n" not in error
