"""Faults against the BERT CLIs (train, fill_mask, evaluate), run as subprocesses on a tiny run:
bad lines on stdin, bytes that are not UTF-8, checkpoints of another task, missing data."""

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
