"""--precision int8 through the shared verbs: it reaches the model of every task that offers it
(a tiny run of each on its built-in data, evaluated and run on one input as subprocesses), and
it is refused in one line where it cannot run."""

from __future__ import annotations

import json
import re

import pytest
from test_every_task import QUIET, TINY, zoo

from zoo.config import ConfigError, load_config
from zoo.verbs.cli import run_verb
from zoo.verbs.options import VerbOptions
from zoo.verbs.registry import get_spec, task_names

INT8_TASKS = sorted(name for name in task_names() if get_spec(name).int8)


def test_int8_is_offered_for_translation_bert_and_gpt():
    assert INT8_TASKS == ["bert", "bert_finetune", "gpt", "translation"]


@pytest.mark.parametrize("task", INT8_TASKS)
def test_int8_reaches_the_model_that_evaluates_and_predicts(task, tmp_path):
    tiny, run = TINY[task], tmp_path / "run"
    trained = zoo("train", task, *QUIET, *tiny.train, "--train.max_steps=2", f"--train.out_dir={run}")
    assert trained.returncode == 0, trained.stderr

    evaluated = zoo(
        "evaluate", task, str(run), "--checkpoint=last", "--threads=1", "--precision=int8", "--json"
    )
    assert evaluated.returncode == 0, evaluated.stderr
    assert re.search(r"note: --precision int8: [1-9]\d* linear layers in int8", evaluated.stderr)
    # the int8 score is kept beside the float one's place, not in it
    assert json.loads((run / "eval_test_int8.json").read_text()) == json.loads(evaluated.stdout)
    assert not (run / "eval_test.json").exists()

    sample = tiny.sample(tmp_path)
    predicted = zoo("predict", task, str(run), "--checkpoint=last", "--precision=int8", "--json",
                    input=sample + "\n")  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr
    assert json.loads(predicted.stdout)["input"] == sample


def test_int8_on_a_gpu_is_refused_by_name():
    with pytest.raises(ConfigError, match="'precision'.*CPU only"):
        load_config(VerbOptions, None, ["precision=int8", "device=cuda"])


@pytest.mark.parametrize(
    "task, verb, reason",
    [("vit", "evaluate", "not available for this task"), ("gpt", "export", "float weights")],
)
def test_int8_is_refused_in_one_line_where_it_cannot_run(task, verb, reason, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_verb(get_spec(task), verb, [str(tmp_path), f"--output={tmp_path / 'out'}", "--precision=int8"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert reason in err and err.count("\n") == 1


# GPT's tied output projection is read as a tensor, so calibration never sees its input.
@pytest.mark.parametrize("task, unsmoothed", [("bert_finetune", 0), ("gpt", 1), ("translation", 0)])
def test_int8_calibration_smooths_every_int8_layer_the_calibration_reaches(task, unsmoothed, tmp_path):
    tiny, run = TINY[task], tmp_path / "run"
    trained = zoo("train", task, *QUIET, *tiny.train, "--train.max_steps=2", f"--train.out_dir={run}")
    assert trained.returncode == 0, trained.stderr
    evaluated = zoo("evaluate", task, str(run), "--checkpoint=last", "--threads=1", "--precision=int8",
                    "--int8_calibration=16", "--json")  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    note = re.search(
        r"note: --precision int8: (\d+) linear layers in int8 \((\d+) smoothed\)", evaluated.stderr
    )
    assert note and int(note.group(1)) - unsmoothed == int(note.group(2)) > 0, evaluated.stderr
    kept = json.loads((run / "eval_test_int8_smoothed16.json").read_text())  # beside the plain int8 one
    assert kept == json.loads(evaluated.stdout) and kept["int8_calibration"] == 16


def test_int8_calibration_needs_int8_and_a_task_that_offers_it(tmp_path, capsys):
    with pytest.raises(ConfigError, match="'int8_calibration'.*--precision int8"):
        load_config(VerbOptions, None, ["int8_calibration=16"])
    run = tmp_path / "run"
    trained = zoo(
        "train", "bert", *QUIET, *TINY["bert"].train, "--train.max_steps=2", f"--train.out_dir={run}"
    )
    assert trained.returncode == 0, trained.stderr
    with pytest.raises(SystemExit) as exit_info:
        run_verb(
            get_spec("bert"),
            "evaluate",
            [str(run), "--checkpoint=last", "--precision=int8", "--int8_calibration=4"],
        )
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--int8_calibration is not available" in err and err.count("\n") == 1
