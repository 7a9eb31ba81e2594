"""The parsing recipe's data.unk_prob is a probability, checked when the config is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.parsing.config import ParsingConfig
from tests.faults.clirun import PARSING, assert_refused, run
from zoo.config import ConfigError, load_config


@pytest.mark.parametrize("value", ["1.5", "-0.1"])
def test_unk_prob_outside_0_1_is_refused_when_read(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^key 'data.unk_prob': .*\[0, 1\]"):
        load_config(ParsingConfig, overrides=[f"--data.unk_prob={value}"])


@pytest.mark.parametrize("value", ["0", "1"])
def test_unk_prob_may_be_0_or_1(value: str) -> None:
    assert load_config(ParsingConfig, overrides=[f"--data.unk_prob={value}"]).data.unk_prob == float(value)


def test_the_cli_refuses_unk_prob_1_5_before_touching_the_run_directory(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run("zoo", "train", "parsing", *PARSING, f"--train.out_dir={out}", "--data.unk_prob=1.5")
    assert_refused(result, "key 'data.unk_prob'")
    assert not out.exists()
