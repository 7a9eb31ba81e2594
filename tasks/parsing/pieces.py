"""Treebank words as a pretrained BERT's WordPiece input (Kitaev et al., 2019, benepar).

The chart parser may read each sentence through a BERT as well as through its own embeddings:
the sentence's words are undone from Penn Treebank escapes (`-LRB-` -> `(`, `` `` `` -> `"`,
`\\/` -> `/`), cut into WordPieces one word at a time (so every word owns a contiguous run of
pieces), and framed by [CLS] ... [SEP]. The parser reads the BERT's last layer at each word's
first piece; its BOS and EOS read [CLS] and [SEP].

What the parser must keep to rebuild the BERT without its source (the module's dimensions and
the tokenizer) travels in the parser's vocabulary artifact as a `BertSpec`.

Shape key: B sentences, T = n + 2 words with BOS/EOS, P longest piece sequence with [CLS]/[SEP].
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from zoo.convert.hf_bert import LoadedBert
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import BertModelConfig

PTB_ESCAPES = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LCB-": "{",
    "-RCB-": "}",
    "-LSB-": "[",
    "-RSB-": "]",
    "``": '"',
    "''": '"',
    "`": "'",
}


def unescape(word: str) -> str:
    """The text a Penn Treebank token stands for."""
    return PTB_ESCAPES.get(word, word.replace("\\/", "/").replace("\\*", "*"))


@dataclass
class BertSpec:
    """A BERT's shape and tokenizer: enough to rebuild it (weights come from the checkpoint)."""

    config: BertModelConfig
    vocab_size: int
    pad_id: int
    tokenizer_json: str

    @classmethod
    def of(cls, loaded: LoadedBert) -> BertSpec:
        return cls(
            loaded.config,
            loaded.model.vocab_size,
            loaded.model.pad_id,
            loaded.tokenizer.to_bytes().decode("utf-8"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "config": dataclasses.asdict(self.config)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BertSpec:
        return cls(**{**data, "config": BertModelConfig(**data["config"])})


class WordPieces:
    """Sentences of words -> (pieces, first piece of every word) for a BERT's tokenizer."""

    def __init__(self, spec: BertSpec) -> None:
        self.tokenizer = WordPieceTokenizer.from_bytes(spec.tokenizer_json.encode("utf-8"))
        self.max_len = spec.config.max_len
        self._pieces: dict[str, list[int]] = {}

    def of(self, word: str) -> list[int]:
        """The word's pieces ([UNK] for a word its normaliser empties, e.g. a control character)."""
        if word not in self._pieces:
            self._pieces[word] = self.tokenizer.encode(unescape(word)) or [self.tokenizer.unk_id]
        return self._pieces[word]

    def length(self, words: list[str]) -> int:
        """Pieces of the sentence with [CLS] and [SEP]."""
        return sum(len(self.of(w)) for w in words) + 2

    def batch(self, sentences: list[list[str]]) -> tuple[Tensor, Tensor]:
        """pieces (B, P) padded with [PAD]; first (B, T) the piece each of BOS, the words, EOS
        reads (padding positions read [CLS])."""
        t = self.tokenizer
        rows, firsts = [], []
        for words in sentences:
            row, first = [t.cls_id], [0]
            for word in words:
                first.append(len(row))
                row.extend(self.of(word))
            first.append(len(row))
            rows.append(row + [t.sep_id])
            firsts.append(first)
        pieces = torch.full((len(rows), max(map(len, rows))), t.pad_id, dtype=torch.long)
        first = torch.zeros((len(rows), max(map(len, firsts))), dtype=torch.long)
        for b, (row, index) in enumerate(zip(rows, firsts)):
            pieces[b, : len(row)] = torch.tensor(row)
            first[b, : len(index)] = torch.tensor(index)
        return pieces, first
