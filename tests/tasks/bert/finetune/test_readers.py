"""Fine-tuning readers: what they read, what they refuse (one line naming file:line or the
question id), the dev carve, and the shared data's counts."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from tasks.bert.finetune.readers import (
    Example,
    SquadExample,
    TaggedSentence,
    carve_dev,
    carve_sentence_dev,
    read_conll,
    read_labelled_tsv,
    read_squad,
    split_by_article,
)
from zoo.config import UserError


def write(path: Path, text: str | bytes) -> Path:
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def refused(call: Callable[[], object], where: str) -> str:
    """The message of the UserError that `call` raises: one line, starting with `where`."""
    with pytest.raises(UserError) as info:
        call()
    message = str(info.value)
    assert message.startswith(where) and "\n" not in message, message
    return message


# ---- labelled TSV


@pytest.mark.parametrize("name", ["train.tsv", "train.tsv.gz"])
def test_tsv_reads_plain_and_gzip(tmp_path, name):
    path = write(tmp_path / name, "sentence\tlabel\nit 's good \t1\nbad .\t0\nfine\t1\n")
    examples, labels = read_labelled_tsv(path)
    assert examples == [Example(("it 's good",), "1"), Example(("bad .",), "0"), Example(("fine",), "1")]
    assert labels == ["0", "1"]


def test_tsv_reads_pairs_in_column_order_with_given_labels(tmp_path):
    path = write(tmp_path / "rte.tsv", "index\tsentence2\tsentence1\tlabel\n0\tb\ta\tentailment\n")
    examples, labels = read_labelled_tsv(
        path,
        text_columns=("sentence1", "sentence2"),
        labels=["not_entailment", "entailment"],
    )
    assert examples == [Example(("a", "b"), "entailment")]
    assert labels == ["not_entailment", "entailment"]


@pytest.mark.parametrize(
    "text, options, line, says",
    [
        ("text\tlabel\na\t1\n", {}, 1, "no column 'sentence'"),
        ("sentence\tlabel\tlabel\na\t1\t1\n", {}, 1, "a repeated column 'label'"),
        ("sentence\tlabel\na\t1\nb\t0\textra\n", {}, 3, "3 tab-separated fields, but the header names 2"),
        ("sentence\tlabel\nnolabel\n", {}, 2, "1 tab-separated fields"),
        ("s1\ts2\tlabel\na\t\t1\n", {"text_columns": ("s1", "s2")}, 2, "empty text in column 's2'"),
        ("sentence\tlabel\na\t2\n", {"labels": ["0", "1"]}, 2, "label '2' is not one of ['0', '1']"),
        ("idx\tlabel\tsentence\n0\t\tgood\n", {}, 2, "empty label in column 'label'"),
    ],
)
def test_tsv_refuses_with_file_and_line(tmp_path, text, options, line, says):
    path = write(tmp_path / "bad.tsv", text)
    assert says in refused(lambda: read_labelled_tsv(path, **options), f"{path}:{line}: ")


def test_tsv_refuses_bad_utf8_and_empty_files(tmp_path):
    path = write(tmp_path / "latin1.tsv.gz", b"sentence\tlabel\na\t1\ncaf\xe9\t0\n")
    assert "not valid UTF-8" in refused(lambda: read_labelled_tsv(path), f"{path}:3: ")
    empty = write(tmp_path / "empty.tsv", "")
    refused(lambda: read_labelled_tsv(empty), f"{empty}: empty file")
    header = write(tmp_path / "header.tsv", "sentence\tlabel\n")
    refused(lambda: read_labelled_tsv(header), f"{header}: no examples")


# ---- CoNLL


CONLL = """Confidence NN B-NP
in IN B-PP
the DT B-NP
pound NN I-NP

-DOCSTART- -X- O

He PRP B-NP
rose VBD I-VP
. . O
"""


@pytest.mark.parametrize("name", ["train.txt", "train.txt.gz"])
def test_conll_reads_sentences(tmp_path, name):
    # Extra blank lines, a document separator, no blank line at the end, and an I-VP after
    # B-NP (conlleval's chunk start): all accepted.
    path = write(tmp_path / name, "\n" + CONLL.replace("\n\n", "\n\n\n").rstrip("\n"))
    assert read_conll(path) == [
        TaggedSentence(("Confidence", "in", "the", "pound"), ("B-NP", "B-PP", "B-NP", "I-NP")),
        TaggedSentence(("He", "rose", "."), ("B-NP", "I-VP", "O")),
    ]


def test_conll_reads_chosen_columns(tmp_path):
    path = write(tmp_path / "ner.txt", "EU NNP B-NP I-ORG\nrejects VBZ B-VP O\n")
    assert read_conll(path, tag_column=2) == [TaggedSentence(("EU", "rejects"), ("B-NP", "B-VP"))]
    assert read_conll(path)[0].tags == ("I-ORG", "O")


@pytest.mark.parametrize("tag", ["E-NP", "S-NP", "B-", "B", "X-NP", "o"])
def test_conll_refuses_a_tag_that_is_not_bio(tmp_path, tag):
    path = write(tmp_path / "bad.txt", f"a DT B-NP\n\nb NN {tag}\n")
    assert f"tag {tag!r} is not O, B-X or I-X" in refused(lambda: read_conll(path), f"{path}:3: ")


def test_conll_refuses_bad_columns_and_empty_files(tmp_path):
    path = write(tmp_path / "bad.txt", "a DT B-NP\nb B-NP\n")
    assert "2 columns, but the first token line has 3" in refused(lambda: read_conll(path), f"{path}:2: ")
    assert "no tag column 3 among 3 columns" in refused(lambda: read_conll(path, tag_column=3), f"{path}:1: ")
    empty = write(tmp_path / "empty.txt", "\n\n")
    refused(lambda: read_conll(empty), f"{empty}: no sentences")


# ---- dev carve


def test_carve_is_deterministic_disjoint_and_in_order():
    items = list(range(100))
    train, dev = carve_dev(items, 0.1, seed=3)
    assert (train, dev) == carve_dev(items, 0.1, seed=3)
    assert len(dev) == 10 and sorted(train + dev) == items and not set(train) & set(dev)
    assert train == sorted(train) and dev == sorted(dev)
    # a sample of the whole, not its tail, and another seed draws another one
    assert dev != items[-10:] and carve_dev(items, 0.1, seed=4)[1] != dev


def test_carve_takes_counts_and_is_pinned():
    # pinned: a change here changes every recipe's dev split
    assert carve_dev(list(range(20)), 5, seed=0)[1] == [3, 5, 7, 12, 15]


@pytest.mark.parametrize("size", [0, 0.01, 10, 1.0])
def test_carve_refuses_an_empty_split(size):
    refused(lambda: carve_dev(list(range(10)), size), f"dev size {size} of 10 items")


def test_a_sentence_carve_holds_whole_sentences_and_drops_their_phrases_from_training():
    sentences = [f"s{i} w{i} plays a very good game today" for i in range(6)]
    phrases = [" ".join(s.split()[a:b]) for s in sentences for a, b in ((0, 2), (1, 8))]
    other = ["a very good game", "s1 w1 plays badly"]  # inside every sentence / inside none
    items = [Example((t,), str(i % 2)) for i, t in enumerate(sentences + phrases + other)]
    train, dev = carve_sentence_dev(items, 2, seed=0, min_words=8)
    assert len(dev) == 2 and all(len(e.texts[0].split()) >= 8 for e in dev)
    inside = [e for e in items if any(f" {e.texts[0]} " in f" {d.texts[0]} " for d in dev)]
    assert len(inside) == 2 + 2 * 2 + 1  # the dev sentences, their two phrases each, the shared one
    assert train == [e for e in items if e not in inside]
    assert "s1 w1 plays badly" in [e.texts[0] for e in train]
    assert (train, dev) == carve_sentence_dev(items, 2, seed=0, min_words=8)


def test_a_sentence_carve_refuses_when_no_example_is_long_enough():
    refused(
        lambda: carve_sentence_dev([Example(("two words",), "0")] * 3, 1, seed=0, min_words=5),
        "no training example has 5 words or more",
    )


# ---- SQuAD


def squad_file(path: Path, *articles: tuple[str, str, list[dict]]) -> Path:
    """A SQuAD file with one paragraph per article: (title, context, qas)."""
    data = [{"title": t, "paragraphs": [{"context": c, "qas": qas}]} for t, c, qas in articles]
    return write(path, json.dumps({"data": data, "version": "1.1"}))


def qa(qid: str, *answers: tuple[str, int | None]) -> dict:
    return {
        "id": qid,
        "question": f"question {qid}?",
        "answers": [{"text": t} if s is None else {"answer_start": s, "text": t} for t, s in answers],
    }


CONTEXT = "the cat sat on the mat."


def test_squad_reads_questions_and_locates_missing_starts(tmp_path, caplog):
    path = squad_file(
        tmp_path / "dev.json.gz",
        ("Cats", CONTEXT, [qa("q1", ("the mat", 15), ("mat", None)), qa("q2", ("the", None))]),
    )
    with caplog.at_level(logging.INFO, logger="tasks.bert.finetune.readers"):
        examples = read_squad(path)
    assert examples == [
        SquadExample("q1", "Cats", CONTEXT, "question q1?", (("the mat", 15), ("mat", 19))),
        # the first occurrence, though "the" occurs twice
        SquadExample("q2", "Cats", CONTEXT, "question q2?", (("the", 0),)),
    ]
    assert "2 answers had no answer_start" in caplog.text


@pytest.mark.parametrize(
    "qas, says",
    [
        ([qa("q1", ("the mat", 14))], "question q1: answer_start 14 does not point at the answer 'the mat'"),
        ([qa("q1", ("the dog", None))], "question q1: answer 'the dog' does not occur in its context"),
        ([qa("q1", (" ", None))], "question q1: empty answer text"),
        ([qa("q1")], "question q1: no answer"),
        ([qa("q1", ("cat", 4)), qa("q1", ("mat", 19))], "question q1: the id occurs twice"),
        ([{"question": "?", "answers": []}], "article 1: no str 'id'"),
    ],
)
def test_squad_refuses_with_file_and_question(tmp_path, qas, says):
    path = squad_file(tmp_path / "bad.json", ("Cats", CONTEXT, qas))
    assert says in refused(lambda: read_squad(path), f"{path}: ")


def test_squad_refuses_bad_files(tmp_path):
    twice = squad_file(tmp_path / "twice.json", ("Cats", CONTEXT, [qa("q1", ("cat", 4))]), ("Cats", "x", []))
    assert "title 'Cats' repeats" in refused(lambda: read_squad(twice), f"{twice}: article 2: ")
    broken = write(tmp_path / "broken.json", '{"data": [\n{"title": "Cats",,\n')
    assert "not valid JSON" in refused(lambda: read_squad(broken), f"{broken}:2: ")
    other = write(tmp_path / "other.json", "[1, 2]")
    refused(lambda: read_squad(other), f"{other}: not a SQuAD file")


def _examples(titles: str) -> list[SquadExample]:
    return [SquadExample(f"{t}{i}", t, "c", "q", (("c", 0),)) for i, t in enumerate(titles)]


def test_split_by_article_takes_the_first_articles_in_order():
    examples = _examples("AABCCCD")
    train, held_out = split_by_article(examples, 2)
    assert [e.id for e in train] == ["A0", "A1", "B2"] and [e.id for e in held_out] == [
        "C3",
        "C4",
        "C5",
        "D6",
    ]
    assert split_by_article(examples, 2) == (train, held_out)
    for count in (0, 4):
        refused(
            lambda count=count: split_by_article(examples, count), f"train_articles={count}: must be 1 to 3"
        )


# ---- the shared data


@pytest.mark.data
def test_sst2_counts(data_dir):
    train, labels = read_labelled_tsv(data_dir / "sst2" / "train.tsv.gz")
    dev, _ = read_labelled_tsv(data_dir / "sst2" / "dev.tsv.gz", labels=labels)
    assert (len(train), len(dev), labels) == (67_349, 872, ["0", "1"])
    assert sum(e.label == "1" for e in train) == 37_569 and sum(e.label == "1" for e in dev) == 444
    assert not any(e.texts[0].endswith(" ") for e in train)


@pytest.mark.data
def test_conll2000_counts_and_carve(data_dir):
    train = read_conll(data_dir / "conll2000" / "train.txt.gz")
    test = read_conll(data_dir / "conll2000" / "test.txt.gz")
    assert (len(train), len(test)) == (8_936, 2_012)
    assert (sum(len(s.words) for s in train), sum(len(s.words) for s in test)) == (211_727, 47_377)
    assert sum(t.startswith("B-") for s in train for t in s.tags) == 106_978
    kept, dev = carve_dev(train, 0.1)
    assert (len(kept), len(dev)) == (8_042, 894)


@pytest.mark.data
def test_squad_dev_counts_and_article_split(data_dir):
    examples = read_squad(data_dir / "squad-v1.1" / "dev-v1.1.json.gz")
    assert (len(examples), sum(len(e.answers) for e in examples)) == (10_570, 34_726)
    train, held_out = split_by_article(examples, 38)
    assert len({e.title for e in train}) == 38 and len({e.title for e in held_out}) == 10
    assert (len(train), len(held_out)) == (8_582, 1_988)
    assert not {e.title for e in train} & {e.title for e in held_out}
