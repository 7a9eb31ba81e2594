"""Tiny finished runs of the translation and ViT tasks, trained once through their CLIs."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import TRANSLATION, VIT, Result, run, write_corpus, write_images


@pytest.fixture(scope="session")
def translation_run(tmp_path_factory) -> tuple[Path, Result]:
    """(run directory, the training command's result): data.path is relative to data.data_dir,
    so --data_dir points evaluate at another copy of the corpus."""
    root = tmp_path_factory.mktemp("translation")
    write_corpus(root / "data" / "corpus")
    out = root / "run"
    result = run("tasks.translation.train", *TRANSLATION, f"--data.data_dir={root / 'data'}",
                 f"--train.out_dir={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    return out, result


@pytest.fixture(scope="session")
def vit_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("vit")
    images = write_images(root / "images")
    out = root / "run"
    result = run("tasks.vit.train", *VIT, f"--data.path={images}", f"--train.out_dir={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    return out
