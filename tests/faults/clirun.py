"""Running the real CLIs as subprocesses, tiny runs of each task to feed them, and what every
refused input must look like: exit 2, one line on stderr, no traceback."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from tasks.translation import synthetic

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
QUIET = ["--train.progress=false", "--train.tensorboard=false", "--train.log_every=1", "--train.threads=1"]
TRANSLATION = [
    *QUIET,
    "--data.source=files",
    "--data.path=corpus",
    "--data.vocab_size=300",
    "--data.max_tokens=512",
    "--model.dim=32",
    "--model.ffn_dim=64",
    "--model.num_heads=2",
    "--model.encoder_layers=1",
    "--model.decoder_layers=1",
    "--decode.beam_size=1",
    "--train.max_steps=2",
    "--train.eval_every=0",
]
VIT = [
    *QUIET,
    "--data.dataset=imagefolder",
    "--model.num_classes=3",
    "--model.image_size=8",
    "--model.patch_size=4",
    "--model.dim=16",
    "--model.ffn_dim=32",
    "--model.num_heads=2",
    "--model.encoder_layers=1",
    "--data.batch_size=4",
    "--data.eval_batch_size=8",
    "--train.max_steps=2",
]
PARSING = [
    *QUIET,
    "--train.max_steps=2",
    "--train.eval_every=0",
    "--train.save_every=0",
    "--data.grammar_sizes=[40,5,5]",
    "--model.dim=32",
    "--model.ffn_dim=64",
    "--model.encoder_layers=1",
]
BERT = [
    *QUIET,
    "--model.num_layers=1",
    "--model.dim=32",
    "--model.num_heads=2",
    "--model.ffn_dim=64",
    "--model.max_len=64",
    "--data.synthetic_train=60",
    "--data.synthetic_valid=10",
    "--data.vocab_size=300",
    "--data.batch_size=8",
    "--train.max_steps=2",
    "--train.eval_every=2",
    "--schedule.warmup_steps=1",
]
GPT = [
    *QUIET,
    "--model.num_layers=1",
    "--model.dim=32",
    "--model.num_heads=2",
    "--model.max_len=32",
    "--data.synthetic_train=60",
    "--data.synthetic_valid=10",
    "--data.vocab_size=300",
    "--data.context=32",
    "--data.batch_size=4",
    "--train.max_steps=2",
    "--train.eval_every=2",
    "--schedule.warmup_steps=1",
]
# A line far longer than any position table (3,000 words, about 12,000 subword ids).
LONG_EN, LONG_DE = " ".join(["house"] * 3000), " ".join(["Haus"] * 3000)
CLASSES = ("cat", "dog", "emu")


class Result:
    """A finished command: exit code and its decoded output."""

    def __init__(self, proc: subprocess.CompletedProcess) -> None:
        self.returncode = proc.returncode
        self.stdout = proc.stdout.decode(errors="replace")
        self.stderr = proc.stderr.decode(errors="replace")


def run(module: str, *args: str, input: bytes | str = b"", script: str | None = None) -> Result:
    """`python -m module args` (or `python -c script args`) with stdin `input`."""
    command = ["-c", script] if script else ["-m", module]
    data = input.encode() if isinstance(input, str) else input
    return Result(
        subprocess.run(
            [sys.executable, *command, *args], input=data, capture_output=True, timeout=300, env=ENV
        )
    )


def assert_refused(result: Result, *named: str) -> None:
    """Exit 2 with exactly one line on stderr that names each of `named`."""
    err = result.stderr.strip()
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    assert "Traceback" not in err and err.count("\n") == 0, err
    for word in named:
        assert word in err, (word, err)


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under `folder` and a hash of its bytes: what a refused command must not touch."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def write_corpus(folder: Path, *, long_pairs: bool = True) -> Path:
    """SPLIT.{en,de} files of the synthetic corpus; with `long_pairs`, valid and test each hold
    one pair (not the last) longer than any position table."""
    train, valid, test = synthetic.splits(0, train=300, valid=10, test=10)
    extra = [(LONG_EN, LONG_DE)] if long_pairs else []
    folder.mkdir(parents=True, exist_ok=True)
    for name, pairs in (
        ("train", train),
        ("valid", valid[:5] + extra + valid[5:]),
        ("test", test[:5] + extra + test[5:]),
    ):
        for side, lang in enumerate(("en", "de")):
            (folder / f"{name}.{lang}").write_text("\n".join(p[side] for p in pairs) + "\n")
    return folder


def write_images(root: Path, classes: dict[str, tuple[str, ...]] | None = None) -> Path:
    """An ImageFolder tree of random 8x8 grey PNGs, 4 per class: {split: classes}."""
    rng = np.random.default_rng(0)
    for split, names in (classes or {"train": CLASSES, "val": CLASSES}).items():
        for name in names:
            (root / split / name).mkdir(parents=True, exist_ok=True)
            for i in range(4):
                pixels = rng.integers(0, 255, (8, 8), dtype=np.uint8)
                Image.fromarray(pixels).save(root / split / name / f"{i}.png")
    return root
