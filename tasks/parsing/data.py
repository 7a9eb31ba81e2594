"""Treebanks for the parsers: where the trees come from, the vocabularies, and batches.

Vocabularies are built from the training trees only and travel inside every checkpoint
(`Vocab.to_json`), so a trained run parses without the treebank. Words and characters share
zoo's special ids (padding, unknown, BOS, EOS). What each parser makes of them, its batches, is
in tasks/parsing/chart/batches.py and tasks/parsing/seq2seq/batches.py.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch
from nltk import Tree
from nltk.tokenize import TreebankWordTokenizer

from tasks.parsing.config import DataConfig
from tasks.parsing.grammar import grammar_treebank
from tasks.parsing.linearize import WORD, BracketSymbols, linearize
from tasks.parsing.pieces import BertSpec, WordPieces
from tasks.parsing.spans import tree_spans
from tasks.parsing.trees import SPLITS, clean, is_phrase, load_trees, read_mrg, split_files
from zoo.config import UserError
from zoo.data.paths import resolve_data_dir
from zoo.data.seeding import example_rng
from zoo.data.special import SPECIAL_IDS

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]  # in SPECIAL_IDS order
SAMPLE_PATH = "ptb-sample/combined"
VOCAB_ARTIFACT = "vocab.json"  # the file name of the vocabulary inside checkpoints
UNK_STREAM = 1  # the zoo.data.seeding stream of a training tree's <unk> replacement


def load_treebank(cfg: DataConfig) -> dict[str, list[Tree]]:
    """{train, dev, test} cleaned trees of the configured source.

    Raises:
        UserError: a split with no tree (it would score "F1 0.00" as if parsed), named with its
            files; and what the readers refuse (tasks.parsing.trees).
    """
    if cfg.source == "grammar":
        if len(cfg.grammar_sizes) != 3:
            raise UserError(f"data.grammar_sizes: need 3 sizes (train, dev, test), got {cfg.grammar_sizes}")
        treebank = grammar_treebank(cfg.grammar_seed, tuple(cfg.grammar_sizes))
        for split, trees in treebank.items():
            if not trees:
                raise UserError(f"data.grammar_sizes={cfg.grammar_sizes}: the {split} split has no trees")
        return treebank
    if cfg.source not in ("sample", "wsj"):
        raise UserError(f"data.source: unknown {cfg.source!r}; expected grammar | sample | wsj")
    data_dir = resolve_data_dir(cfg.data_dir)
    path = Path(cfg.path or (SAMPLE_PATH if cfg.source == "sample" else ""))
    if not cfg.path and cfg.source == "wsj":
        raise UserError("data.path: the wsj source needs the folder of section folders 00..24")
    if not path.is_absolute():
        if data_dir is None:
            raise UserError(f"data.data_dir (or $ZOO_DATA_DIR) is not set: where is {path}?")
        path = data_dir / path
    treebank = {}
    for split in SPLITS:
        files = split_files(cfg.source, path, split)
        treebank[split] = load_trees(files)
        if not treebank[split]:
            where = files[0].name if len(files) == 1 else f"{files[0].name} .. {files[-1].name}"
            raise UserError(f"{cfg.source} treebank {path}: the {split} split has no trees ({where})")
    return treebank


_TOKENIZER = TreebankWordTokenizer()
# A bare bracket would make a printed tree unreadable: the Treebank writes -LRB- / -RRB-.
_BRACKETS = {"(": "-LRB-", ")": "-RRB-"}


def treebank_tokens(sentence: str) -> list[str]:
    """The words of a sentence as the Penn Treebank has them (nltk's Treebank tokenizer:
    "don't" -> "do n't", quotes as `` and '', the final period split off; brackets escaped)."""
    return [_BRACKETS.get(word, word) for word in _TOKENIZER.tokenize(sentence)]


def _index(items: list[str]) -> dict[str, int]:
    return {item: i for i, item in enumerate(items)}


@dataclass
class Vocab:
    """Id tables: words and characters (specials first), part-of-speech tags, chart labels
    (index 0 = "", no constituent) and seq2seq tree symbols (specials, XX, then (X and )X);
    and, when the chart parser reads a pretrained BERT too, that BERT's `BertSpec` as a dict."""

    words: list[str]
    chars: list[str]
    tags: list[str]
    labels: list[str]
    phrase_labels: list[str]
    bert: dict | None = None

    def __post_init__(self) -> None:
        self.word_index, self.char_index = _index(self.words), _index(self.chars)
        self.bert_spec = BertSpec.from_dict(self.bert) if self.bert else None
        self.pieces = WordPieces(self.bert_spec) if self.bert_spec else None
        self.tag_index, self.label_index = _index(self.tags), _index(self.labels)
        self.symbols = (
            SPECIALS + [WORD] + [f"({x}" for x in self.phrase_labels] + [f"){x}" for x in self.phrase_labels]
        )
        self.symbol_index = _index(self.symbols)

    @classmethod
    def build(cls, trees: list[Tree], bert: BertSpec | None = None, extra_words: list[str] = ()) -> Vocab:
        """The tables of `trees`, words most frequent first; `extra_words` (frequent_words of
        other trees) follow the trees' own words, so the trees' ids do not depend on them."""
        words = Counter(w for t in trees for w in t.leaves())
        by_count = sorted(words, key=lambda w: (-words[w], w))
        by_count += [w for w in extra_words if w not in words]
        chars = {c for w in by_count for c in w}
        tags = sorted({tag for t in trees for _, tag in t.pos()})
        labels = sorted({label for t in trees for _, _, label in tree_spans(t)})
        phrases = sorted({s.label() for t in trees for s in t.subtrees() if is_phrase(s)})
        return cls(
            SPECIALS + by_count,
            SPECIALS + sorted(chars),
            tags,
            [""] + labels,
            phrases,
            bert.to_dict() if bert else None,
        )

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "words": self.words,
                "chars": self.chars,
                "tags": self.tags,
                "labels": self.labels,
                "phrase_labels": self.phrase_labels,
                "bert": self.bert,
            }
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Vocab:
        return cls(**json.loads(data))

    def word_ids(self, words: list[str]) -> list[int]:
        return [self.word_index.get(w, SPECIAL_IDS.unk) for w in words]

    def char_ids(self, word: str) -> list[int]:
        return [self.char_index.get(c, SPECIAL_IDS.unk) for c in word]

    def bracket_symbols(self) -> BracketSymbols:
        n = len(self.phrase_labels)
        first = len(SPECIALS) + 1
        return BracketSymbols(
            torch.arange(first, first + n),
            torch.arange(first + n, first + 2 * n),
            word_id=self.symbol_index[WORD],
            eos_id=SPECIAL_IDS.eos,
            vocab_size=len(self.symbols),
        )


def frequent_words(trees: list[Tree], min_count: int) -> list[str]:
    """The words of `trees` seen at least `min_count` times, most frequent first (ties by the
    word); none when min_count < 1."""
    if min_count < 1:
        return []
    words = Counter(w for t in trees for w in t.leaves())
    return sorted((w for w, n in words.items() if n >= min_count), key=lambda w: (-words[w], w))


def read_extra_trees(paths: list[str], vocab: Vocab) -> list[Tree]:
    """The cleaned trees of `data.extra_train` files.

    Raises:
        UserError: a missing file, a malformed tree, or a tag or label the treebank's vocabulary
            lacks (named with the file and the tree's line).
    """
    trees = []
    for name in paths:
        path = Path(name)
        if not path.is_file():
            raise UserError(f"data.extra_train: {path} is not a file")
        for line, raw in read_mrg(path):
            tree = clean(raw)
            if tree is None:
                continue
            unknown = ({tag for _, tag in tree.pos()} - set(vocab.tags)) | (
                {label for _, _, label in tree_spans(tree)} - set(vocab.labels)
            )
            if unknown:
                raise UserError(
                    f"{path}:{line}: {', '.join(sorted(unknown))}: not a tag or label of the "
                    "treebank (data.extra_train trees must use the treebank's)"
                )
            trees.append(tree)
    return trees


@dataclass
class Encoded:
    """One training tree in ids: words, tags, chart spans (start, end, label id), symbols."""

    words: list[str]
    word_ids: list[int]
    tag_ids: list[int]
    spans: list[tuple[int, int, int]]
    symbol_ids: list[int]


def encode(tree: Tree, vocab: Vocab) -> Encoded:
    words, tags = zip(*tree.pos())
    spans = [(i, j, vocab.label_index[label]) for i, j, label in tree_spans(tree)]
    return Encoded(
        list(words),
        vocab.word_ids(list(words)),
        [vocab.tag_index[t] for t in tags],
        spans,
        [vocab.symbol_index[s] for s in linearize(tree)],
    )


def replace_rare(
    examples: list[Encoded], indices: list[int], rare: set[int], prob: float, *, seed: int, epoch: int
) -> list[list[int]]:
    """Word ids with each rare word replaced by <unk> with probability `prob`, drawn from the
    stream of the example's index in the epoch's data (zoo.data.seeding), whatever its batch."""
    out = []
    for ex, index in zip(examples, indices):
        ids = list(ex.word_ids)
        if prob > 0 and any(w in rare for w in ids):
            draws = example_rng(seed, epoch, index, stream=UNK_STREAM).random(len(ids)).tolist()
            ids = [SPECIAL_IDS.unk if w in rare and d < prob else w for w, d in zip(ids, draws)]
        out.append(ids)
    return out
