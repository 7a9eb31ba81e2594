"""Faults against the parsing CLIs (python -m zoo VERB parsing, and the tasks.parsing shims), run
as subprocesses on a tiny run: bad sentences, bytes that are not UTF-8, checkpoints of another
task, options the parser has no meaning for, malformed tree files and missing data."""

from __future__ import annotations

from pathlib import Path

from clirun import PARSING, assert_refused, fingerprint, run
from nltk import Tree


def parse(run_dir: Path, *args: str, input: bytes | str = b"") -> object:
    return run("zoo", "parse", "parsing", str(run_dir), *args, input=input)


def test_non_utf8_on_stdin_names_the_line(parsing_run):
    assert_refused(parse(parsing_run, input=b"the dog barked\nthe \xff cat\n"), "stdin:2", "UTF-8")
    shim = run("tasks.parsing.parse", str(parsing_run), input=b"the dog barked\nthe \xff cat\n")
    assert_refused(shim, "stdin:2", "UTF-8")


def test_non_utf8_in_the_input_file_names_file_and_line(parsing_run, tmp_path):
    source = tmp_path / "sentences.txt"
    source.write_bytes(b"the dog barked\n\n\xc3\x28 cat\n")
    assert_refused(parse(parsing_run, f"--input={source}"), f"{source}:3", "UTF-8")


def test_brackets_in_a_sentence_still_print_readable_trees(parsing_run):
    result = parse(parsing_run, input="the dog ( a cat ) barked\n:-)\n")
    assert result.returncode == 0, result.stderr[-3000:]
    trees = [Tree.fromstring(line) for line in result.stdout.splitlines()]
    assert [t.leaves() for t in trees] == [
        ["the", "dog", "-LRB-", "a", "cat", "-RRB-", "barked"],
        [":", "-", "-RRB-"],
    ]


def test_a_sentence_longer_than_the_positions_is_left_flat_with_a_notice(parsing_run):
    result = parse(parsing_run, input="the dog barked\n" + " ".join(["dog"] * 3000) + "\n")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "3000 words" in result.stderr and len(result.stdout.splitlines()) == 2


def test_checkpoints_of_another_task_are_refused_both_ways(parsing_run, vit_run):
    assert_refused(parse(vit_run, input="the dog\n"), "ViTConfig", "ParsingConfig")
    before = fingerprint(parsing_run / "checkpoints")
    assert_refused(run("tasks.vit.evaluate", str(parsing_run)), "ParsingConfig", "ViTConfig")
    assert fingerprint(parsing_run / "checkpoints") == before


def test_options_parsing_has_no_meaning_for_are_refused_in_one_line(parsing_run, tmp_path):
    assert_refused(run("zoo", "export", "parsing", str(parsing_run), f"--output={tmp_path / 'x'}"),
                   "parsing: no export format")  # fmt: skip
    assert_refused(parse(parsing_run, "--batch_size=8", input="the dog\n"), "--max_tokens")
    assert_refused(run("zoo", "evaluate", "parsing", str(parsing_run), "--split=bogus"), "split")
    missing = f"--output={tmp_path / 'no' / 'pred.mrg'}"
    assert_refused(run("zoo", "evaluate", "parsing", str(parsing_run), missing), "does not exist")


def test_a_malformed_tree_file_names_file_and_line(tmp_path):
    folder = tmp_path / "sample"
    folder.mkdir()
    for n in range(1, 200):  # the NLTK sample's wsj_0001 .. wsj_0199
        (folder / f"wsj_{n:04d}.mrg").write_text("( (S (NP (DT The) (NN dog)) (VP (VBD barked))) )\n")
    bad = folder / "wsj_0150.mrg"
    bad.write_text("( (S (NP (DT The) (NN dog))\n   (VP (VBD barked)) )\n\n( (S (NP (NN cat) ) )\n")
    result = run(
        "tasks.parsing.train",
        *PARSING,
        "--data.source=sample",
        f"--data.path={folder}",
        f"--train.out_dir={tmp_path / 'run'}",
    )
    assert_refused(result, f"{bad}:1", "never closed")


def test_a_missing_data_dir_is_named(tmp_path):
    result = run(
        "tasks.parsing.train",
        *PARSING,
        "--data.source=sample",
        "--data.data_dir=/nonexistent/data",
        f"--train.out_dir={tmp_path / 'run'}",
    )
    assert_refused(result, "/nonexistent/data")
