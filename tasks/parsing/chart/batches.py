"""The chart parser's inputs and training batches.

It reads each sentence between BOS and EOS (its fenceposts come from their neighbours): word
ids, each word's characters and, with a BERT, the word pieces (tasks.parsing.pieces).

Shape key: B sentences, T = n + 2 positions, C longest word in characters, P pieces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from tasks.parsing.data import Encoded, Vocab
from zoo.data.seq2seq import Ids, pad
from zoo.data.special import SPECIAL_IDS


@dataclass
class ChartInput:
    """words (B, T) BOS + ids + EOS, padded; chars (B, T, C); lengths (B,) words per sentence;
    with a BERT, pieces (B, P) and the piece each position reads, first (B, T) (tasks.parsing.pieces)."""

    words: Tensor
    chars: Tensor
    lengths: Tensor
    pieces: Tensor | None = None
    first: Tensor | None = None

    def model_inputs(self, device: torch.device | None = None) -> tuple[Tensor | None, ...]:
        """The arguments of ChartParser.forward."""
        return tuple(
            None if x is None else x.to(device) for x in (self.words, self.chars, self.pieces, self.first)
        )


def chart_input(
    sentences: list[list[str]], vocab: Vocab, word_ids: list[list[int]] | None = None
) -> ChartInput:
    """The chart parser's input for tokenised sentences (word ids may be given, e.g. with <unk>s)."""
    ids = word_ids or [vocab.word_ids(s) for s in sentences]
    words = pad(
        Ids.from_rows(ids), np.arange(len(ids)), SPECIAL_IDS.pad, first=SPECIAL_IDS.bos, last=SPECIAL_IDS.eos
    )
    spelled = [
        [[SPECIAL_IDS.bos]] + [vocab.char_ids(w) or [SPECIAL_IDS.unk] for w in s] + [[SPECIAL_IDS.eos]]
        for s in sentences
    ]
    chars = torch.full(
        (*words.shape, max(len(c) for s in spelled for c in s)), SPECIAL_IDS.pad, dtype=torch.long
    )
    for b, sentence in enumerate(spelled):
        for t, word in enumerate(sentence):
            chars[b, t, : len(word)] = torch.tensor(word)
    pieces = vocab.pieces.batch(sentences) if vocab.pieces else (None, None)
    return ChartInput(words, chars, torch.tensor([len(s) for s in sentences]), *pieces)


@dataclass
class ChartBatch:
    """A chart training batch: input, gold tags (B, n) (-100 at padding) and gold spans."""

    input: ChartInput
    tags: Tensor
    spans: list[list[tuple[int, int, int]]]


def collate(examples: list[Encoded], vocab: Vocab, word_ids: list[list[int]]) -> ChartBatch:
    tags = pad(Ids.from_rows([ex.tag_ids for ex in examples]), np.arange(len(examples)), -100)
    return ChartBatch(
        chart_input([ex.words for ex in examples], vocab, word_ids), tags, [ex.spans for ex in examples]
    )
