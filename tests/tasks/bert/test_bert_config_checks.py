"""BERT pretraining's data options checked before any work: probabilities when the config is
read, a vocab.txt without BERT's special tokens when the tokenizer is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.bert.config import BertPretrainingConfig
from tests.faults.clirun import BERT, assert_refused, run
from zoo.config import ConfigError, load_config

BERT = [*BERT, "--train.max_steps=1"]  # the tiny BERT of the fault tests


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("--data.masked_lm_prob=2", "data.masked_lm_prob"),
        ("--data.masked_lm_prob=0", "data.masked_lm_prob"),
        ("--data.masked_lm_prob=-0.1", "data.masked_lm_prob"),
        ("--data.short_seq_prob=1.5", "data.short_seq_prob"),
        ("--data.short_seq_prob=-0.1", "data.short_seq_prob"),
    ],
)
def test_a_probability_outside_its_range_is_refused_when_read(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^key '{key}': "):
        load_config(BertPretrainingConfig, overrides=[override])


def test_the_edges_of_the_ranges_are_accepted() -> None:
    load_config(BertPretrainingConfig, overrides=["--data.masked_lm_prob=1", "--data.short_seq_prob=0"])
    load_config(BertPretrainingConfig, overrides=["--data.short_seq_prob=1"])


def test_the_cli_refuses_masked_lm_prob_2_before_touching_the_run_directory(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run("zoo", "train", "bert", *BERT, f"--train.out_dir={out}", "--data.masked_lm_prob=2")
    assert_refused(result, "key 'data.masked_lm_prob'")
    assert not out.exists()


def test_the_cli_names_data_tokenizer_and_the_special_tokens_its_vocab_lacks(tmp_path: Path) -> None:
    vocab, out = tmp_path / "tiny.txt", tmp_path / "run"
    vocab.write_text("[PAD]\n[UNK]\nthe\ntown\n##s\n")
    result = run("zoo", "train", "bert", *BERT, f"--train.out_dir={out}", f"--data.tokenizer={vocab}")
    assert_refused(result, "key 'data.tokenizer'", str(vocab), "[CLS] [SEP] [MASK]")
    assert sorted(p.name for p in out.iterdir()) == [".lock"]  # no tokenizer.json, config or checkpoint
