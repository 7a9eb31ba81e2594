"""Sentence-pair classification end to end, on a two-column TSV a user would write: train a tiny
classifier, evaluate and predict it through the CLI, and check the pair's encoding, token type
(segment) ids included, against Hugging Face's BertTokenizerFast on the run's own vocabulary."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from transformers import BertTokenizerFast

from tasks.bert.finetune import heads, train
from tasks.bert.finetune.config import FinetuneConfig
from tasks.bert.finetune.examples import builtin_set
from tasks.bert.finetune.readers import Example
from tasks.bert.finetune.spec import FinetuneSpec, sample_input
from tests.tasks.bert.finetune.conftest import tiny_args
from tests.tasks.bert.finetune.test_finetune_cli import STEPS, Terminal, drawn_tokens, verb
from zoo.train import load_trained
from zoo.verbs.options import VerbOptions

COLUMNS = ("premise", "hypothesis")
LABELS = ("different", "same")


def write_pairs(path: Path, rows: int, seed: int) -> list[tuple[str, str, str]]:
    """A TSV of `rows` sentence pairs from the built-in set, labelled `same` when both sentences
    describe the same kind of entity; a column between the texts that the reader must skip."""
    sentences = builtin_set("classify", [4, 1, 1], 0, "train")
    rng = random.Random(seed)
    pairs = []
    for _ in range(rows):
        a, b = rng.sample(sentences, 2)
        pairs.append((a.texts[0], b.texts[0], LABELS[a.label == b.label]))
    lines = [f"{COLUMNS[0]}\tid\t{COLUMNS[1]}\tlabel"]
    lines += [f"{a}\t{n}\t{b}\t{label}" for n, (a, b, label) in enumerate(pairs)]
    path.write_text("\n".join(lines) + "\n")
    return pairs


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory) -> tuple[Path, list[tuple[str, str, str]]]:
    """A pair classifier trained for 20 steps; its run directory and its test pairs."""
    data = tmp_path_factory.mktemp("pairs")
    write_pairs(data / "train.tsv", 24, seed=0)
    write_pairs(data / "valid.tsv", 6, seed=1)
    test = write_pairs(data / "test.tsv", 6, seed=2)
    run = data / "run"
    train.main([
        *tiny_args("classify"), *STEPS, f"--train.out_dir={run}", f"--data.data_dir={data}",
        "--data.train=train.tsv", "--data.valid=valid.tsv", "--data.test=test.tsv",
        f"--data.text_columns=[{COLUMNS[0]},{COLUMNS[1]}]", "--data.batch_size=4",
    ])  # fmt: skip
    return run, test


def test_a_pair_classifier_trains_evaluates_and_predicts_through_the_cli(pair_run, monkeypatch, capsys):
    run, test = pair_run
    output = run / "test.txt"
    record = verb("evaluate", str(run), "--split=test", "--json", f"--output={output}")
    assert record["head"] == "classify" and record["examples"] == len(test)
    assert {"accuracy", "f1", "mcc"} <= record.keys()  # two labels: GLUE's binary metrics too
    written = [line.split("\t") for line in output.read_text().splitlines()]
    agree = sum(label == gold for (label, _), (*_, gold) in zip(written, test, strict=True))
    assert record["accuracy"] == pytest.approx(100 * agree / len(test))
    lines = "".join(f"{a}\t{b}\n" for a, b, _ in test)
    predicted = verb("predict", str(run), "--json", stdin=lines, monkeypatch=monkeypatch)
    # predict reads a pair as evaluate does: the same labels, line for line
    assert [p["label"] for p in predicted] == [label for label, _ in written]
    assert all(p["label"] in LABELS and 0.5 <= p["probability"] <= 1 for p in predicted)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:  # one text where the model reads two
        verb("predict", str(run), stdin=f"{test[0][0]}\n", monkeypatch=monkeypatch)
    error = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and "stdin:1:" in error and "two texts separated by a tab" in error


def test_a_pair_is_encoded_as_bert_and_hugging_face_encode_it(pair_run, tmp_path):
    """[CLS] A [SEP] B [SEP] with token types 0 up to the first [SEP] and 1 after it: the ids and
    types BertTokenizerFast gives on the exported vocabulary, at every length the pair is cut to
    (longest_first: odd and even budgets, either text the longer, texts of equal length)."""
    run, test = pair_run
    verb("export", str(run), f"--output={tmp_path / 'hf'}")
    theirs = BertTokenizerFast.from_pretrained(tmp_path / "hf")
    loaded = FinetuneSpec().load([load_trained(run, FinetuneConfig)], VerbOptions(run=str(run)))
    cls, sep = loaded.tokenizer.cls_id, loaded.tokenizer.sep_id

    def ours(first: str, second: str, max_len: int) -> tuple[list[int], list[int]]:
        loaded.cfg.data.max_seq_length = max_len
        encoded = heads.encode(loaded.cfg, [Example((first, second), "")], loaded.tokenizer, [])
        return encoded.ids[0], encoded.types[0]

    a, b, _ = test[0]
    ids, types = ours(a, b, 64)
    first, second = (theirs(text, add_special_tokens=False)["input_ids"] for text in (a, b))
    assert ids == [cls, *first, sep, *second, sep] and len(first) != len(second)
    assert types == [0] * (len(first) + 2) + [1] * (len(second) + 1)
    for pair in ((a, b), (b, a), (a, a), (a, " ".join([b] * 3))):
        whole = len(theirs(*pair)["input_ids"])
        for max_len in range(5, whole + 1):
            expected = theirs(*pair, truncation="longest_first", max_length=max_len)
            assert ours(*pair, max_len) == (expected["input_ids"], expected["token_type_ids"]), (
                pair,
                max_len,
            )


def test_attention_without_input_draws_a_pair_for_a_pair_model(pair_run, tmp_path, monkeypatch):
    """No input and stdin a terminal: the held-out sample as a pair, two sentences, as if typed."""
    run, _ = pair_run
    drawn = drawn_tokens(monkeypatch)
    monkeypatch.setattr("sys.stdin", Terminal())
    verb("attention", str(run), f"--output={tmp_path / 'default.png'}")
    typed = sample_input("classify", columns=2)
    verb(
        "attention",
        str(run),
        f"--output={tmp_path / 'typed.png'}",
        stdin=typed + "\n",
        monkeypatch=monkeypatch,
    )
    assert len(drawn) == 2 and drawn[0] == drawn[1] and drawn[0].count("[SEP]") == 2
