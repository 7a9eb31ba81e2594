"""A pretraining corpus and its splits, as BERT's and GPT's recipes name them: the built-in
synthetic documents (zoo.data.corpus), a WikiExtractor folder with some `wiki_NN` files held out,
or training and validation files.

`CorpusConfig` holds the recipe keys both tasks read; each task's data section extends it with
its own sources and keys (its tokenizer, its examples).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from zoo.config import UserError
from zoo.data.corpus import synthetic_documents
from zoo.data.documents import Document, wiki_files
from zoo.data.paths import under_data_dir

SYNTHETIC_SPLITS = ("train", "valid", "test")


@dataclass
class CorpusConfig:
    source: str = field(default="synthetic", metadata={"help": "synthetic | wikiextractor | text"})
    data_dir: str = field(
        default="", metadata={"resume": "may change", "help": "data directory ('' = $ZOO_DATA_DIR)"}
    )
    path: str = field(
        default="enwiki-extract",
        metadata={
            "resume": "may change",
            "help": "wikiextractor: the folder of wiki_NN files; the other file sources: the training "
            "file (relative paths are taken from data_dir)",
        },
    )
    valid: list[str] = field(
        default_factory=lambda: ["wiki_29"],
        metadata={
            "help": "wikiextractor: files of the folder held out for validation; the other file "
            "sources: the validation file(s)"
        },
    )
    wikitext: str = field(
        default="wikitext-2",
        metadata={
            "resume": "may change",
            "help": "folder under data_dir with WikiText valid.txt/test.txt that evaluate scores ('' = none)",
        },
    )
    synthetic_seed: int = field(default=0, metadata={"help": "synthetic: seed of the corpus"})
    synthetic_train: int = field(default=4000, metadata={"help": "synthetic: training documents"})
    synthetic_valid: int = field(default=400, metadata={"help": "synthetic: held-out documents"})
    min_paragraph_words: int = field(
        default=8,
        metadata={"help": "wikiextractor: shorter paragraph lines are headings or list leftovers, dropped"},
    )


def synthetic_split(cfg: CorpusConfig, split: str) -> list[Document]:
    """The built-in corpus's documents of `split`: the training ones, then the held-out ones, then
    as many test ones, all from one seeded stream (so the held-out documents do not depend on how
    many test ones are asked for)."""
    if split not in SYNTHETIC_SPLITS:
        raise UserError(f"unknown split {split!r}: {', '.join(SYNTHETIC_SPLITS)}")
    train, valid = cfg.synthetic_train, cfg.synthetic_valid
    documents = synthetic_documents(train + valid * (2 if split == "test" else 1), cfg.synthetic_seed)
    return {"train": documents[:train], "valid": documents[train : train + valid]}.get(
        split, documents[train + valid :]
    )


def split_files(cfg: CorpusConfig, split: str) -> list[Path]:
    """The files of `split` (train | valid): a WikiExtractor folder's files without (train) or
    with only (valid) the held-out `data.valid` names; else `data.path` (train) or `data.valid`."""
    if cfg.source != "wikiextractor":
        return [under_data_dir(cfg.data_dir, p) for p in ([cfg.path] if split == "train" else cfg.valid)]
    folder = under_data_dir(cfg.data_dir, cfg.path)
    if not folder.is_dir():
        raise UserError(f"data.path: WikiExtractor folder not found: {folder}")
    files = wiki_files(folder)
    unknown = set(cfg.valid) - {f.name for f in files}
    if unknown:
        raise UserError(f"key 'data.valid': {sorted(unknown)} not among the files of {folder}")
    return [f for f in files if (f.name in cfg.valid) == (split == "valid")]
