"""Faults against the BERT commands (train, fill_mask, evaluate, export and python -m zoo), run as
subprocesses on a tiny run: bad lines on stdin, bytes that are not UTF-8, checkpoints of another
task, missing data, a split or option that means nothing, an existing output directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import BERT, assert_refused, fingerprint, run


def fill_mask(run_dir: Path, input: bytes | str) -> object:
    return run("tasks.bert.fill_mask", str(run_dir), input=input)


@pytest.mark.parametrize(
    "lines, named",
    [
        (b"the town lies on the [MASK] .\n\nthe \xff [MASK]\n", ("stdin:3", "UTF-8")),
        (b"the town lies on the [MASK] .\nno mask here\n", ("stdin:2", "no [MASK]")),
        (("the [MASK] " + "town " * 300).encode(), ("stdin:1", "exceeds the model's 64")),
    ],
)
def test_bad_lines_on_stdin_are_named(bert_run, lines, named):
    assert_refused(fill_mask(bert_run, lines), *named)


def test_checkpoints_of_another_task_are_refused_both_ways(bert_run, translation_run):
    before = fingerprint(bert_run / "checkpoints")
    assert_refused(fill_mask(translation_run[0], "the [MASK] .\n"), "TranslationConfig")
    assert_refused(run("tasks.bert.evaluate", str(translation_run[0])), "TranslationConfig")
    assert_refused(
        run("tasks.translation.translate", str(bert_run), input="a man\n"), "BertPretrainingConfig"
    )
    assert fingerprint(bert_run / "checkpoints") == before


def test_a_missing_data_dir_is_named(bert_run, tmp_path):
    assert_refused(
        run("tasks.bert.evaluate", str(bert_run), "--data_dir=/nonexistent/data"), "/nonexistent/data"
    )
    result = run(
        "tasks.bert.train",
        *BERT,
        "--data.source=wikiextractor",
        "--data.data_dir=/nonexistent/data",
        f"--train.out_dir={tmp_path / 'run'}",
    )
    assert_refused(result, "/nonexistent/data")


def test_meaningless_splits_options_and_existing_outputs_are_refused_in_one_line(bert_run, tmp_path):
    assert_refused(run("tasks.bert.evaluate", str(bert_run), "--split=train"), "--split train")
    missing = run("tasks.bert.evaluate", str(bert_run), f"--data_dir={tmp_path}", "--wikitext=wikitext-2")
    assert_refused(missing, str(tmp_path / "wikitext-2"), "test.txt")
    assert_refused(run("tasks.bert.export", str(bert_run), f"--output={tmp_path}"), str(tmp_path), "--force")
    assert_refused(run("zoo", "fill-mask", "bert", str(bert_run), "--top_k=0", input="a [MASK] .\n"), "top_k")
    tflite = run("zoo", "export", "bert", str(bert_run), "--format=tflite", f"--output={tmp_path / 'x'}")
    assert_refused(tflite, "hf")
