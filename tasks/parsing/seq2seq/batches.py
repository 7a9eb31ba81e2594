"""The seq2seq parser's training batches: zoo's sequence pairs (words + EOS in, BOS + tree
symbols / tree symbols + EOS out) and, with a BERT, the batch's word pieces."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tasks.parsing.data import Encoded, Vocab
from tasks.parsing.seq2seq.model import PieceSource
from zoo.data.seq2seq import Ids, Seq2SeqBatch, SequencePairs
from zoo.data.special import SPECIAL_IDS


@dataclass
class ParserBatch:
    """pairs: zoo's batch of (word ids, tree symbols); source: the BERT's pieces or None;
    words: the batch's words (the unit of speed)."""

    pairs: Seq2SeqBatch
    source: PieceSource | None
    words: int


def piece_source(sentences: list[list[str]], vocab: Vocab) -> PieceSource | None:
    """The BERT's input for sources of these words (each word and the EOS read a piece; the
    source has no BOS, so [CLS] is read by nobody); None without a BERT."""
    if vocab.pieces is None:
        return None
    pieces, first = vocab.pieces.batch(sentences)
    return PieceSource(pieces, first[:, 1:])


def collate(examples: list[Encoded], vocab: Vocab, word_ids: list[list[int]]) -> ParserBatch:
    pairs = SequencePairs(Ids.from_rows(word_ids), Ids.from_rows([ex.symbol_ids for ex in examples]))
    return ParserBatch(
        pairs.collate(np.arange(len(examples)), SPECIAL_IDS),
        piece_source([ex.words for ex in examples], vocab),
        sum(len(ex.words) for ex in examples),
    )
