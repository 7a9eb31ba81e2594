"""Readers of fine-tuning data: labelled TSV (GLUE), CoNLL B-I-O tagging, SQuAD v1.1 JSON.

Each reads a user's own file, plain or gzip-compressed (by the `.gz` suffix), through
`zoo.data.text.read_lines`, so a line that is not UTF-8 is refused with its file and line number.
Every other bad input is a `UserError` in one line that names the file and the line (or, for
SQuAD, the question id), raised before a model sees anything.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from zoo.config import UserError
from zoo.data.text import read_lines

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Example:
    """One labelled example: one text (a sentence) or two (a pair), and its label."""

    texts: tuple[str, ...]
    label: str


def read_labelled_tsv(
    path: str | Path,
    *,
    text_columns: Sequence[str] = ("sentence",),
    label_column: str = "label",
    labels: Sequence[str] | None = None,
) -> tuple[list[Example], list[str]]:
    """The examples of a GLUE-style TSV file: a header line naming the columns, then one example
    a line. Fields are stripped (GLUE's SST-2 puts a space before the tab).

    Args:
        path: the file (plain or .gz).
        text_columns: the columns holding the text(s), in order; two for a sentence pair.
        label_column: the column holding the label.
        labels: the allowed labels, in id order; None takes the labels seen, sorted as strings
            (so ids do not depend on which label the file shows first).

    Returns:
        The examples in file order, and the label list (label id = index in it).

    Raises:
        UserError: a missing or repeated column name, a line with another number of fields than
            the header, an empty text or label, or a label outside `labels`; the message names
            the file and line.
    """
    path = Path(path)
    lines = enumerate(read_lines(path), start=1)
    first = next(lines, None)
    if first is None:
        raise UserError(f"{path}: empty file (expected a header line naming the columns)")
    names = [name.strip() for name in first[1].split("\t")]
    text_index = [_column(names, name, path) for name in text_columns]
    label_index = _column(names, label_column, path)
    examples = []
    for number, line in lines:
        fields = [field.strip() for field in line.split("\t")]
        if len(fields) != len(names):
            raise UserError(
                f"{path}:{number}: {len(fields)} tab-separated fields, but the header names {len(names)}"
            )
        where = f"{path}:{number}"
        for name, index in zip(text_columns, text_index):
            if not fields[index]:
                raise UserError(f"{where}: empty text in column {name!r}")
        label = fields[label_index]
        if not label:
            raise UserError(f"{where}: empty label in column {label_column!r}")
        if labels is not None and label not in labels:
            raise UserError(f"{where}: label {label!r} is not one of {list(labels)}")
        examples.append(Example(tuple(fields[i] for i in text_index), label))
    if not examples:
        raise UserError(f"{path}: no examples after the header line")
    return examples, list(labels) if labels is not None else sorted({e.label for e in examples})


def _column(names: list[str], name: str, path: Path) -> int:
    if names.count(name) != 1:
        found = "no" if name not in names else "a repeated"
        raise UserError(f"{path}:1: {found} column {name!r} in the header (columns: {names})")
    return names.index(name)


@dataclass(frozen=True)
class TaggedSentence:
    """One sentence of words and their B-I-O tags (`O`, `B-X`, `I-X`), one tag a word."""

    words: tuple[str, ...]
    tags: tuple[str, ...]


# Anything after the first hyphen is the type, as conlleval splits it (types may hold hyphens).
TAG = re.compile(r"O|[BI]-\S+")
# CoNLL-2003's document separator line: not a sentence, so it is skipped.
DOCSTART = "-DOCSTART-"


def read_conll(path: str | Path, *, word_column: int = 0, tag_column: int = -1) -> list[TaggedSentence]:
    """The sentences of a CoNLL file: one token a line in whitespace-separated columns, a blank
    line between sentences. Tags are IOB2 or IOB1: an `I-X` after `O` or after another type is
    accepted (conlleval reads it as the start of a chunk).

    Args:
        path: the file (plain or .gz).
        word_column: the column of the word (Python indexing).
        tag_column: the column of the tag (the last one by default, as in CoNLL-2000).

    Raises:
        UserError: a line with another number of columns than the first, a column that is not
            there, or a tag that is not `O`, `B-X` or `I-X`; the message names the file and line.
    """
    path = Path(path)
    sentences: list[TaggedSentence] = []
    words: list[str] = []
    tags: list[str] = []
    width = 0
    for number, line in enumerate(read_lines(path), start=1):
        if not line:
            if words:
                sentences.append(TaggedSentence(tuple(words), tuple(tags)))
            words, tags = [], []
            continue
        fields = line.split()
        if not width:
            width = len(fields)
            _check_columns(width, {"word": word_column, "tag": tag_column}, f"{path}:{number}")
        if len(fields) != width:
            raise UserError(f"{path}:{number}: {len(fields)} columns, but the first token line has {width}")
        word, tag = fields[word_column], fields[tag_column]
        if word == DOCSTART:
            continue
        if not TAG.fullmatch(tag):
            raise UserError(f"{path}:{number}: tag {tag!r} is not O, B-X or I-X")
        words.append(word)
        tags.append(tag)
    if words:
        sentences.append(TaggedSentence(tuple(words), tuple(tags)))
    if not sentences:
        raise UserError(f"{path}: no sentences")
    return sentences


def _check_columns(width: int, columns: dict[str, int], where: str) -> None:
    for name, column in columns.items():
        if not -width <= column < width:
            raise UserError(f"{where}: no {name} column {column} among {width} columns")


def carve_dev(items: Sequence[T], size: float | int, seed: int = 0) -> tuple[list[T], list[T]]:
    """Split a training set into (train, dev) by a seeded random sample, both kept in input order.

    A random sample rather than the last sentences: CoNLL-2000 train is WSJ sections 15-18 in
    order, so its tail is a few stories of one section, not a sample of the whole. The draw uses
    only `random.Random(seed).random()`, whose sequence Python keeps the same across versions, so
    a given seed carves the same split everywhere.

    Args:
        items: the training items (sentences, examples).
        size: a fraction of the items (a float in (0, 1), rounded to a count) or a count (an int).
        seed: the seed of the draw; fix it in the recipe so every run sees the same split.

    Raises:
        UserError: the size leaves one of the splits empty.
    """
    count = round(size * len(items)) if isinstance(size, float) else size
    if not 0 < count < len(items):
        raise UserError(f"dev size {size} of {len(items)} items leaves the train or the dev split empty")
    rng = random.Random(seed)
    keys = [rng.random() for _ in items]
    dev = set(sorted(range(len(items)), key=keys.__getitem__)[:count])
    return [x for i, x in enumerate(items) if i not in dev], [x for i, x in enumerate(items) if i in dev]


def carve_sentence_dev(
    examples: Sequence[Example], size: float | int, seed: int, min_words: int
) -> tuple[list[Example], list[Example]]:
    """Split a phrase-level training set into (train, dev) with whole sentences as the dev set.

    SST-2's training set holds its sentences and, mostly, phrases cut from them (mean 9 words),
    while its dev and test sets are whole sentences (mean 20). A random carve is then a dev set
    of short phrases whose parent sentences stay in training: it scores 90% where the real dev
    set scores 81%, so it chooses checkpoints and settings for another distribution. Here the dev
    set is drawn (as `carve_dev`) among examples of at least `min_words` words, and every training
    example whose text lies inside a drawn one (a contiguous run of its words) is dropped, so
    that no carved sentence's label leaks through its phrases.
    """
    words = [" ".join(e.texts).split() for e in examples]
    candidates = [i for i, w in enumerate(words) if len(w) >= min_words]
    if not candidates:
        raise UserError(f"no training example has {min_words} words or more to carve a dev set from")
    _, drawn = carve_dev(candidates, size, seed)
    inside = {
        tuple(words[i][a:b])
        for i in drawn
        for a in range(len(words[i]))
        for b in range(a + 1, len(words[i]) + 1)
    }
    dev = set(drawn)
    train = [e for i, e in enumerate(examples) if i not in dev and tuple(words[i]) not in inside]
    return train, [examples[i] for i in drawn]


@dataclass(frozen=True)
class SquadExample:
    """One SQuAD question on one context, with its answers as (text, character start)."""

    id: str
    title: str
    context: str
    question: str
    answers: tuple[tuple[str, int], ...]


def read_json(path: str | Path) -> Any:
    """A JSON file (plain or .gz), its lines checked as UTF-8 one by one.

    Raises:
        UserError: the file is missing, not UTF-8, or not JSON; the message names the file and line.
    """
    path = Path(path)
    # Joined with "\n" so a JSON error's line number is the file's (JSON strings hold no raw
    # newlines, so the stripping of read_lines changes no value).
    text = "\n".join(read_lines(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from None


def read_squad(path: str | Path) -> list[SquadExample]:
    """The questions of a SQuAD v1.1 JSON file, in file order.

    An answer's `answer_start` must point at its text in the context. Where it is absent, the
    start is the first occurrence of the text in the context (logged once with a count). The
    rebuilt dev set in the shared data has starts made that way already, so for the 4,162
    answers whose text occurs more than once the start may be earlier than the official one.

    Raises:
        UserError: a malformed file, a repeated article title (split_by_article groups by title)
            or question id, a question with no answer, or an answer that is empty, not in its
            context, or not where its answer_start says; the message names the file and the
            question id (or the article).
    """
    path = Path(path)
    data = read_json(path)
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list):
        raise UserError(f"{path}: not a SQuAD file (no top-level 'data' list)")
    examples: list[SquadExample] = []
    titles: set[str] = set()
    ids: set[str] = set()
    located = 0
    for number, article in enumerate(articles, start=1):
        where = f"{path}: article {number}"
        title = _get(article, "title", str, where)
        if title in titles:
            raise UserError(f"{where}: title {title!r} repeats an earlier article's")
        titles.add(title)
        for paragraph in _get(article, "paragraphs", list, where):
            context = _get(paragraph, "context", str, where)
            for qa in _get(paragraph, "qas", list, where):
                example = _question(qa, title, context, path, where)
                if example.id in ids:
                    raise UserError(f"{path}: question {example.id}: the id occurs twice")
                ids.add(example.id)
                examples.append(example)
                located += sum(a.get("answer_start") is None for a in qa["answers"])
    if not examples:
        raise UserError(f"{path}: no questions")
    if located:
        log.info("%s: %d answers had no answer_start: took the text's first occurrence", path, located)
    return examples


def _question(qa: Any, title: str, context: str, path: Path, article: str) -> SquadExample:
    qid = _get(qa, "id", str, article)
    where = f"{path}: question {qid}"
    answers = tuple(_answer(a, context, where) for a in _get(qa, "answers", list, where))
    if not answers:
        raise UserError(f"{where}: no answer (SQuAD v2.0's unanswerable questions are not supported)")
    return SquadExample(qid, title, context, _get(qa, "question", str, where), answers)


def _get(obj: Any, key: str, kind: type, where: str) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        raise UserError(f"{where}: no {kind.__name__} {key!r}")
    return value


def _answer(answer: Any, context: str, where: str) -> tuple[str, int]:
    text = _get(answer, "text", str, where)
    if not text.strip():
        raise UserError(f"{where}: empty answer text")
    start = answer.get("answer_start")
    if start is None:
        start = context.find(text)
        if start < 0:
            raise UserError(f"{where}: answer {text!r} does not occur in its context")
    elif not isinstance(start, int) or start < 0 or context[start : start + len(text)] != text:
        raise UserError(
            f"{where}: answer_start {start!r} does not point at the answer {text!r} in its context"
        )
    return text, start


def split_by_article(
    examples: Sequence[SquadExample], train_articles: int
) -> tuple[list[SquadExample], list[SquadExample]]:
    """(train, eval): the questions of the first `train_articles` articles and those of the rest.

    Articles are taken in the order their titles first appear, so the split is a pure function of
    that order and the count (the recipe: the dev set's first 38 articles to train, the last 10
    to evaluate).

    Raises:
        UserError: the count leaves either side without an article.
    """
    titles = list(dict.fromkeys(e.title for e in examples))
    if not 0 < train_articles < len(titles):
        raise UserError(
            f"train_articles={train_articles}: must be 1 to {len(titles) - 1} ({len(titles)} articles)"
        )
    train = set(titles[:train_articles])
    return [e for e in examples if e.title in train], [e for e in examples if e.title not in train]
