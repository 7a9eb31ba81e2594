"""Sequence-to-sequence ids: flat storage, padding and batch collation.

Every sequence carries one special token: sources end with EOS; the decoder reads
`tgt_in = BOS y` and predicts `tgt_out = y EOS`. Padding is on the right. Ids are stored flat
(uint16 when the vocabulary allows) with offsets, so WMT14's 4.5M pairs take about 0.6 GB, and
batches are cut from them on demand.

Shape key: B batch, S source length, T target length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import torch
from torch import Tensor

from zoo.data.special import SpecialIds


def id_dtype(vocab_size: int) -> type:
    """The smallest dtype that holds every id: uint16 halves the memory of big corpora."""
    return np.uint16 if vocab_size <= np.iinfo(np.uint16).max + 1 else np.int32


@dataclass
class Ids:
    """Variable-length id sequences stored flat: row i is flat[offsets[i]:offsets[i + 1]]."""

    flat: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[int]], vocab_size: int = 2**31) -> Ids:
        return cls.concat([chunk(rows, id_dtype(vocab_size))])

    @classmethod
    def concat(cls, chunks: list[tuple[np.ndarray, np.ndarray]]) -> Ids:
        """Join (flat ids, row lengths) chunks, as `chunk` makes them."""
        flat = np.concatenate([f for f, _ in chunks])
        offsets = np.zeros(sum(len(n) for _, n in chunks) + 1, dtype=np.int64)
        np.cumsum(np.concatenate([n for _, n in chunks]), out=offsets[1:])
        return cls(flat, offsets)

    def __len__(self) -> int:
        return self.offsets.size - 1

    @property
    def lengths(self) -> np.ndarray:
        """(N,) ids per row."""
        return np.diff(self.offsets)

    def row(self, i: int) -> list[int]:
        return self.flat[self.offsets[i] : self.offsets[i + 1]].tolist()


def chunk(rows: Sequence[Sequence[int]], dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ids -> (their ids concatenated, their lengths)."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    return np.fromiter(chain.from_iterable(rows), dtype=dtype, count=int(lengths.sum())), lengths


def pad(
    ids: Ids,
    indices: np.ndarray | Sequence[int],
    pad_id: int,
    *,
    first: int | None = None,
    last: int | None = None,
) -> Tensor:
    """Rows `indices` of `ids`, each with an optional token before (`first`) and after
    (`last`), right-padded with `pad_id` into a (B, width) long tensor."""
    indices = np.asarray(indices, dtype=np.int64)
    starts, lengths = ids.offsets[indices], ids.offsets[indices + 1] - ids.offsets[indices]
    shift = int(first is not None)
    width = int(lengths.max(initial=0)) + shift + int(last is not None)
    positions = np.arange(width)[None, :] - shift  # position within the row's ids
    inside = (positions >= 0) & (positions < lengths[:, None])
    gathered = ids.flat[np.where(inside, starts[:, None] + positions, 0)] if ids.flat.size else 0
    out = np.where(inside, np.asarray(gathered, dtype=np.int64), pad_id)
    if first is not None:
        out[:, 0] = first
    if last is not None:
        out[np.arange(indices.size), lengths + shift] = last
    return torch.from_numpy(out)


@dataclass
class Seq2SeqBatch:
    """One right-padded batch of sequence pairs.

    src: (B, S) source ids, each row ending with EOS.
    tgt_in: (B, T) decoder input, BOS + target ids.
    tgt_out: (B, T) decoder output, target ids + EOS.
    tgt_tokens: real target tokens (EOS counted): the units a summed loss is divided by.
    """

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    tgt_tokens: int


@dataclass
class SequencePairs:
    """Aligned source and target id sequences: pair i is (src.row(i), tgt.row(i))."""

    src: Ids
    tgt: Ids

    def __post_init__(self) -> None:
        if len(self.src) != len(self.tgt):
            raise ValueError(f"{len(self.src)} sources but {len(self.tgt)} targets")

    def __len__(self) -> int:
        return len(self.src)

    @property
    def src_lengths(self) -> np.ndarray:
        """Padded source lengths: ids + EOS."""
        return self.src.lengths + 1

    @property
    def tgt_lengths(self) -> np.ndarray:
        """Padded target lengths: ids + BOS (tgt_in) or ids + EOS (tgt_out)."""
        return self.tgt.lengths + 1

    def collate(self, indices: np.ndarray | Sequence[int], special: SpecialIds) -> Seq2SeqBatch:
        """The pairs at `indices` as one padded batch."""
        indices = np.asarray(indices, dtype=np.int64)
        return Seq2SeqBatch(
            src=pad(self.src, indices, special.pad, last=special.eos),
            tgt_in=pad(self.tgt, indices, special.pad, first=special.bos),
            tgt_out=pad(self.tgt, indices, special.pad, last=special.eos),
            tgt_tokens=int(self.tgt_lengths[indices].sum()),
        )
