"""Tiny finished runs of each task, trained once through their CLIs."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import BERT, GPT, PARSING, TRANSLATION, VIT, Result, run, write_corpus, write_images


def train(module: str, out: Path, *args: str) -> Result:
    result = run(module, *args, f"--train.out_dir={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="session")
def translation_run(tmp_path_factory) -> tuple[Path, Result]:
    """(run directory, the training command's result): data.path is relative to data.data_dir,
    so --data_dir points evaluate at another copy of the corpus."""
    root = tmp_path_factory.mktemp("translation")
    write_corpus(root / "data" / "corpus")
    out = root / "run"
    return out, train("tasks.translation.train", out, *TRANSLATION, f"--data.data_dir={root / 'data'}")


@pytest.fixture(scope="session")
def vit_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("vit")
    train("tasks.vit.train", root / "run", *VIT, f"--data.path={write_images(root / 'images')}")
    return root / "run"


@pytest.fixture(scope="session")
def parsing_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("parsing") / "run"
    train("tasks.parsing.train", out, *PARSING)
    return out


@pytest.fixture(scope="session")
def bert_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bert") / "run"
    train("tasks.bert.train", out, *BERT)
    return out


@pytest.fixture(scope="session")
def gpt_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gpt") / "run"
    train("tasks.gpt.train", out, *GPT)
    return out
