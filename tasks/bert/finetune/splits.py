"""The examples of a recipe's split (train, valid, test), from its files or the built-in set.

Every head reads data.train, and data.valid and data.test where given, in one format: classify
TSV files, tag CoNLL column files, span SQuAD v1.1 JSON. Without data.valid the validation split
comes out of data.train: classify and tag carve data.dev_size examples by a seeded sample
(data.dev_seed; classify with data.dev_min_words: whole sentences, their phrases dropped from
training, `readers.carve_sentence_dev`), span holds out the articles after the first
data.train_articles. Without data.test the test split is the validation split (SST-2's labelled
test split is GLUE's server's; the SQuAD recipes hold out 10 of the dev set's articles). The
validation and test labels must be the training set's. Relative paths are taken under the data
directory (data.data_dir, else $ZOO_DATA_DIR).
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
    if split == "test" and (d.test or d.valid):
        return _read_file(cfg, d.test or d.valid, labels)
    if d.valid:
        return _read_file(cfg, d.train if split == "train" else d.valid, labels if split != "train" else None)
    train, held_out = _split_train(cfg)
    return train if split == "train" else held_out


def _read_file(cfg: FinetuneConfig, name: str, labels: list[str] | None) -> list:
    """One file of the head's format; classify checks its labels (data.labels for training)."""
    d = cfg.data
    path = under_data_dir(d.data_dir, name)
    if cfg.head == "classify":
        return read_labelled_tsv(
            path, text_columns=d.text_columns, label_column=d.label_column,
            labels=labels if labels is not None else (d.labels or None),
        )[0]  # fmt: skip
    if cfg.head == "tag":
        return read_conll(path, word_column=d.word_column, tag_column=d.tag_column)
    return read_squad(path)


def _split_train(cfg: FinetuneConfig) -> tuple[list, list]:
    """data.train less the validation split taken out of it, and that split."""
    d = cfg.data
    if cfg.head == "span":
        return split_by_article(_read_file(cfg, d.train, None), d.train_articles)
    if cfg.head == "classify" and d.dev_min_words:
        return carve_sentence_dev(_read_file(cfg, d.train, None), d.dev_size, d.dev_seed, d.dev_min_words)
    return carve_dev(_read_file(cfg, d.train, None), d.dev_size, d.dev_seed)


def describe(cfg: FinetuneConfig, split: str) -> str:
    """Where the split's examples come from, in a few words."""
    d = cfg.data
    if not d.train:
        return f"the built-in {split} set"
    if split == "test" and (d.test or d.valid):
        return d.test or d.valid
    if d.valid:
        return d.train if split == "train" else d.valid
    if cfg.head == "span":
        first = "the first" if split == "train" else "the articles after the first"
        return f"{first} {d.train_articles} articles of {d.train}"
    if split == "train":
        inside = " and the examples inside it" if d.dev_min_words and cfg.head == "classify" else ""
        return f"{d.train} less the dev carve{inside}"
    whole = f" of {d.dev_min_words}+ words" if d.dev_min_words and cfg.head == "classify" else ""
    unit = "sentences" if cfg.head == "tag" else "examples"
    return f"{d.dev_size:,} {unit}{whole} carved from {d.train} (seed {d.dev_seed})"


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
