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


def write_sample(folder: Path) -> Path:
    """The NLTK sample's layout (wsj_0001 .. wsj_0199.mrg), one short tree a file."""
    folder.mkdir(parents=True)
    for n in range(1, 200):
        (folder / f"wsj_{n:04d}.mrg").write_text("( (S (NP (DT The) (NN dog)) (VP (VBD barked))) )\n")
    return folder


def train_sample(folder: Path, out: Path, *args: str) -> object:
    return run("tasks.parsing.train", *PARSING, "--data.source=sample", *args, f"--train.out_dir={out}")


def test_a_malformed_tree_file_names_file_and_line(tmp_path):
    folder = write_sample(tmp_path / "sample")
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


def test_a_treebank_file_that_is_not_utf8_names_file_and_line(tmp_path):
    folder = write_sample(tmp_path / "sample")
    bad = folder / "wsj_0007.mrg"
    bad.write_bytes(b"( (S (NP (NN caf\xe9)) (VP (VBD closed))) )\n")
    result = train_sample(folder, tmp_path / "run", f"--data.path={folder}")
    assert_refused(result, f"{bad}:1", "UTF-8")


def test_an_empty_test_split_is_refused_at_training_and_evaluation(tmp_path):
    folder = write_sample(tmp_path / "one" / "sample")
    run_dir = tmp_path / "run"
    result = train_sample(folder, run_dir, f"--data.data_dir={tmp_path / 'one'}", "--data.path=sample")
    assert result.returncode == 0, result.stderr[-3000:]
    empty = write_sample(tmp_path / "two" / "sample")
    for n in range(172, 200):  # the test split's files, holding no tree
        (empty / f"wsj_{n:04d}.mrg").write_text("\n")
    evaluate = run("zoo", "evaluate", "parsing", str(run_dir), f"--data_dir={tmp_path / 'two'}")
    assert_refused(evaluate, "test split has no trees", "wsj_0172.mrg .. wsj_0199.mrg")
    assert_refused(train_sample(empty, tmp_path / "run2", f"--data.path={empty}"), "test split has no trees")


def test_pretrained_weights_with_another_sha256_are_refused(tmp_path):
    bert = tmp_path / "minilm"
    bert.mkdir()
    (bert / "config.json").write_text("{}")
    (bert / "model.safetensors").write_bytes(b"not the official weights")
    official = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    result = run(
        "tasks.parsing.train",
        *PARSING,
        f"--model.pretrained={bert}",
        f"--model.pretrained_sha256={official}",
        f"--train.out_dir={tmp_path / 'run'}",
    )
    assert_refused(result, f"{bert / 'model.safetensors'}", f"expected {official}")
    assert not (tmp_path / "run" / "checkpoints").exists()


def scorer_files(tmp_path: Path, gold: bytes, test: bytes) -> tuple[Path, Path]:
    (tmp_path / "gold.mrg").write_bytes(gold)
    (tmp_path / "test.mrg").write_bytes(test)
    return tmp_path / "gold.mrg", tmp_path / "test.mrg"


def test_the_scorer_refuses_files_it_cannot_read_one_sentence_a_line(tmp_path):
    tree = b"( (S (NN a) (VB b)))\n"
    gold, test = scorer_files(tmp_path, tree * 3, tree * 2)
    assert_refused(run("tasks.parsing.evalb", str(gold), str(test)), "3 lines", "has 2")
    gold, test = scorer_files(tmp_path, tree * 2, tree + b"( (S (NN a) (VB \xff)))\n")
    assert_refused(run("tasks.parsing.evalb", str(gold), str(test)), f"{test}:2", "UTF-8")
    gold, test = scorer_files(tmp_path, b"( (S (NN a)\n  (VB b)))\n", tree)  # .mrg layout
    assert_refused(run("tasks.parsing.evalb", str(gold), str(test)), f"{gold}:1", "one whole sentence a line")


def test_the_scorer_warns_past_evalb_c_max_error_and_scores_the_rest(tmp_path):
    gold, test = scorer_files(
        tmp_path, b"(S (NN a) (VB b))\n" * 13, b"(S (NN a) (VB b))\n" + b"(S (NN a))\n" * 12
    )
    result = run("tasks.parsing.evalb", str(gold), str(test))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("WARNING: 12 error sentence(s) of 13 not scored: the scores are over 1")
    assert "WARNING" in result.stderr and "MAX_ERROR 10" in result.stderr
    assert "Bracketing FMeasure       = 100.00" in result.stdout
