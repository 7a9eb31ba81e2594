"""The shared verbs over the registry: every task answers every verb's --help with the same
option names, and a tiny run of every task goes train -> evaluate -> predict -> export ->
attention -> average through the real command line, as subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from zoo.verbs.cli import run_verb
from zoo.verbs.options import VerbOptions
from zoo.verbs.registry import get_spec, task_names

SHARED = [f"--{name}=" for name in VerbOptions.__dataclass_fields__]
QUIET = ["--train.progress=false", "--train.tensorboard=false", "--train.threads=1"]


@dataclass
class Tiny:
    """A run of the task in seconds: recipe overrides (it saves at steps 2 and 4), and one input
    line for predict and attention (a function of the test's folder, for tasks that read files)."""

    train: list[str]
    sample: Callable[[Path], str]


def digit_png(path: Path) -> str:
    """The first of scikit-learn's digits as an 8 x 8 greyscale PNG (the vit recipe's images)."""
    from PIL import Image
    from sklearn.datasets import load_digits

    pixels = (load_digits().images[0] * (255 / 16)).round().astype("uint8")
    Image.fromarray(pixels, "L").save(path)
    return str(path)


TINY = {
    "translation": Tiny(
        [
            "--data.synthetic_train=300", "--data.synthetic_valid=10", "--data.synthetic_test=10",
            "--data.vocab_size=200", "--data.max_tokens=256", "--model.dim=32", "--model.ffn_dim=64",
            "--model.num_heads=2", "--model.encoder_layers=1", "--model.decoder_layers=1",
            "--decode.beam_size=1",
        ],
        lambda _: "Julia built my farmer.",
    ),
    "bert": Tiny(
        [
            "--model.num_layers=1", "--model.dim=32", "--model.ffn_dim=64", "--model.max_len=64",
            "--data.synthetic_train=60", "--data.synthetic_valid=10", "--data.batch_size=8",
        ],
        lambda _: "the town lies on the banks of the [MASK] .",
    ),
    "vit": Tiny(
        [
            "--model.dim=16", "--model.ffn_dim=32", "--model.num_heads=2", "--model.encoder_layers=1",
            "--data.batch_size=32",
        ],
        lambda folder: digit_png(folder / "digit.png"),
    ),
    "gpt": Tiny(
        [
            "--model.num_layers=1", "--model.dim=32", "--model.num_heads=2", "--model.max_len=32",
            "--data.synthetic_train=60", "--data.synthetic_valid=10", "--data.vocab_size=300",
            "--data.context=32", "--data.batch_size=4",
        ],
        lambda _: "The town of",
    ),
    "reverse": Tiny(["--data.batch_size=8", "--data.valid_size=16"], lambda _: "3 1 4 1 5"),
    "parsing": Tiny(
        [
            "--data.grammar_sizes=[40,5,5]", "--model.dim=32", "--model.ffn_dim=64", "--model.num_heads=2",
            "--model.encoder_layers=1", "--model.char_dim=8", "--model.label_hidden=32",
        ],
        lambda _: "the old dog saw a cat with the telescope .",
    ),
    "bert_finetune": Tiny(
        [
            "--model.num_layers=1", "--model.dim=32", "--model.ffn_dim=64", "--model.num_heads=2",
            "--model.max_len=64", "--data.builtin_sizes=[6,2,2]", "--data.max_seq_length=64",
        ],
        lambda _: "the town lies on the banks of the river gaka .",
    ),
}  # fmt: skip


def zoo(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zoo", *args], input=input, capture_output=True, text=True, timeout=600
    )


def test_every_task_is_tested_here():
    assert set(task_names()) == set(TINY)


@pytest.mark.parametrize("verb", ["evaluate", "predict", "attention", "export", "average"])
@pytest.mark.parametrize("task", sorted(TINY))
def test_every_verb_of_every_task_lists_the_shared_options(task, verb, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_verb(get_spec(task), verb, ["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert [option for option in SHARED if f"  {option}" not in text] == []


@pytest.mark.parametrize("task", sorted(TINY))
def test_a_tiny_run_goes_through_every_verb(task, tmp_path):
    tiny, run = TINY[task], tmp_path / "run"
    steps = ["--train.max_steps=4", "--train.save_every=2", "--train.keep_last=3", "--train.eval_every=0"]
    trained = zoo("train", task, *QUIET, *tiny.train, *steps, f"--train.out_dir={run}")
    assert trained.returncode == 0, trained.stderr

    evaluated = zoo("evaluate", task, str(run), "--checkpoint=last", "--threads=1", "--limit=4", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    record = json.loads(evaluated.stdout)
    assert record["task"] == task and record["split"] == "test" and record["step"] == 4

    sample = tiny.sample(tmp_path)
    predicted = zoo("predict", task, str(run), "--checkpoint=last", "--json", input=sample + "\n")
    assert predicted.returncode == 0, predicted.stderr
    assert json.loads(predicted.stdout)["input"] == sample
    typed = zoo("predict", task, str(run), "--checkpoint=last", "--json", f"--text={sample}")  # no stdin
    assert typed.returncode == 0 and typed.stdout == predicted.stdout, typed.stderr

    exported = zoo("export", task, str(run), "--checkpoint=last", f"--output={tmp_path / 'exported'}")
    if get_spec(task).export_formats:
        assert exported.returncode == 0, exported.stderr
        assert any((tmp_path / "exported").iterdir())
    else:  # refused in one line, exit 2
        assert exported.returncode == 2 and exported.stderr.count("\n") == 1, exported.stderr

    png = tmp_path / "attention.png"
    drawn = zoo("attention", task, str(run), "--checkpoint=last", f"--output={png}", input=sample + "\n")
    assert drawn.returncode == 0, drawn.stderr
    assert png.stat().st_size > 1000

    averaged = zoo("average", task, str(run), "--last=2", "--force")  # steps 2 and 4: far apart
    assert averaged.returncode == 0, averaged.stderr
    again = zoo("evaluate", task, str(run), "--checkpoint=averaged", "--limit=2", "--json")
    assert again.returncode == 0, again.stderr
