"""The examples of a recipe's split (train, valid, test), from its files or the built-in set.

- classify: data.train, data.valid and data.test TSV files (test '' = valid: SST-2's labelled
  test split is GLUE's server's); valid '' = a dev set carved from data.train as for tag, so
  that a recipe reporting GLUE's dev set can choose its checkpoint on other examples (with
  data.dev_min_words: whole sentences, their phrases dropped from training,
  `readers.carve_sentence_dev`). The validation and test labels must be the training set's.
- tag: data.train's CoNLL sentences, the dev set carved from them (data.dev_size sentences,
  data.dev_seed), data.test the test file ('' = the carved dev).
- span: data.train's SQuAD articles, the first data.train_articles to train, the rest held
  out as both valid and test.
Relative paths are taken under the data directory (data.data_dir, else $ZOO_DATA_DIR).
"""

from __future__ import annotations

from tasks.bert.finetune.config import FinetuneConfig
from tasks.bert.finetune.examples import builtin_labels, builtin_set
from tasks.bert.finetune.readers import (
    Example,
    carve_dev,
    carve_sentence_dev,
    read_conll,
    read_labelled_tsv,
    read_squad,
    split_by_article,
)
from zoo.config import UserError
from zoo.data.paths import under_data_dir

SPLITS = ("train", "valid", "test")


def read_split(cfg: FinetuneConfig, split: str, labels: list[str] | None = None) -> list:
    """The examples of `split` for the recipe's head; classify checks them against `labels`
    (the model's label set; None for the training split, which makes it)."""
    d = cfg.data
    if not d.train:
        examples = builtin_set(cfg.head, d.builtin_sizes, d.builtin_seed, split)
        if labels is not None and cfg.head == "classify":
            _check_labels(examples, labels, f"the built-in {split} set")
        return examples
    if cfg.head == "classify":
        allowed = (d.labels or None) if split == "train" else labels
        if split == "test" and (d.test or d.valid):
            return _read_tsv(cfg, d.test or d.valid, allowed)
        if d.valid:
            return _read_tsv(cfg, d.train if split == "train" else d.valid, allowed)
        return _carved_tsv(cfg, allowed)[split != "train"]
    if cfg.head == "tag":
        if split == "test" and d.test:
            return read_conll(
                under_data_dir(d.data_dir, d.test), word_column=d.word_column, tag_column=d.tag_column
            )
        sentences = read_conll(
            under_data_dir(d.data_dir, d.train), word_column=d.word_column, tag_column=d.tag_column
        )
        return carve_dev(sentences, d.dev_size, d.dev_seed)[split != "train"]
    train, held_out = split_by_article(read_squad(under_data_dir(d.data_dir, d.train)), d.train_articles)
    return train if split == "train" else held_out


def _read_tsv(cfg: FinetuneConfig, name: str, labels: list[str] | None) -> list[Example]:
    d = cfg.data
    return read_labelled_tsv(
        under_data_dir(d.data_dir, name), text_columns=d.text_columns, label_column=d.label_column,
        labels=labels,
    )[0]  # fmt: skip


def _carved_tsv(cfg: FinetuneConfig, labels: list[str] | None) -> tuple[list[Example], list[Example]]:
    """data.train less its dev carve, and the carve."""
    d = cfg.data
    train = _read_tsv(cfg, d.train, labels)
    if d.dev_min_words:
        return carve_sentence_dev(train, d.dev_size, d.dev_seed, d.dev_min_words)
    return carve_dev(train, d.dev_size, d.dev_seed)


def describe(cfg: FinetuneConfig, split: str) -> str:
    """Where the split's examples come from, in a few words."""
    d = cfg.data
    if not d.train:
        return f"the built-in {split} set"
    if cfg.head == "classify":
        if split == "test" and (d.test or d.valid):
            return d.test or d.valid
        if d.valid:
            return d.train if split == "train" else d.valid
        if split == "train":
            inside = " and the examples inside it" if d.dev_min_words else ""
            return f"{d.train} less the dev carve{inside}"
        whole = f" of {d.dev_min_words}+ words" if d.dev_min_words else ""
        return f"{d.dev_size:,} examples{whole} carved from {d.train} (seed {d.dev_seed})"
    if cfg.head == "tag":
        if split == "train" or (split == "test" and d.test):
            return d.test if split == "test" else f"{d.train} less the dev carve"
        return f"{d.dev_size:,} sentences carved from {d.train} (seed {d.dev_seed})"
    first = "the first" if split == "train" else "the articles after the first"
    return f"{first} {d.train_articles} articles of {d.train}"


def label_set(cfg: FinetuneConfig, train: list) -> list[str]:
    """The model's outputs in order: classify data.labels or the training labels sorted; tag the
    training tags sorted (the built-in set: every label it can hold); span none."""
    if not cfg.data.train:
        return builtin_labels(cfg.head)
    if cfg.head == "classify":
        return list(cfg.data.labels) or sorted({e.label for e in train})
    if cfg.head == "tag":
        return sorted({tag for sentence in train for tag in sentence.tags})
    return []


def _check_labels(examples: list[Example], labels: list[str], where: str) -> None:
    unknown = sorted({e.label for e in examples} - set(labels))
    if unknown:
        raise UserError(f"{where}: labels {unknown} are not among the model's {labels}")
