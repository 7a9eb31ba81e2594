"""Translation data: corpus -> joint subword vocabulary -> id arrays -> token-bucketed batches.

Sources (`data.source`):
    synthetic  the built-in generated corpus (tasks/translation/synthetic.py); no files
    multi30k   DATA_DIR/multi30k/{train,val,test_2016_flickr}.{en,de}.gz
    wmt14      DATA_DIR/wmt14/{train,newstest2013,newstest2014}.{en,de}, written by
               `python -m tasks.translation.download`
    files      any folder of SPLIT.LANG or SPLIT.LANG.gz files (`data.path`)

Every sequence carries one special token: sources end with EOS; the decoder reads
`tgt_in = BOS y` and predicts `tgt_out = y EOS`. Padding is on the right with PAD_ID. Ids are
stored flat (uint16 when the vocabulary allows) with offsets, so WMT14's 4.5M pairs take about
0.6 GB, and batches are cut from them on demand.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import torch
from torch import Tensor

from tasks.translation import synthetic
from tasks.translation.config import DataConfig
from tasks.translation.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer
from zoo.config import UserError
from zoo.data.batching import shard, token_batches
from zoo.data.paths import require, resolve_data_dir, write_atomic
from zoo.data.text import ParallelText

log = logging.getLogger(__name__)

# source -> (folder under the data directory, default train, valid and test split names)
LAYOUTS = {
    "multi30k": ("multi30k", "train", "val", "test_2016_flickr"),
    "wmt14": ("wmt14", "train", "newstest2013", "newstest2014"),
    "files": ("", "train", "valid", "test"),
    "synthetic": ("", "train", "valid", "test"),
}
ROLES = ("train", "valid", "test")
_ENCODE_CHUNK = 10_000


@dataclass
class Batch:
    """One batch of sentence pairs, right-padded with PAD_ID.

    src: (B, S) source ids, each row ending with EOS.
    tgt_in: (B, T) decoder input, BOS + target ids.
    tgt_out: (B, T) decoder output, target ids + EOS.
    index: (B,) each row's position in its split (to put decoded sentences back in order).
    src_tokens, tgt_tokens: real tokens (EOS included, padding not) on each side.
    """

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    index: Tensor
    src_tokens: int
    tgt_tokens: int


@dataclass
class Ids:
    """Variable-length id sequences stored flat: row i is flat[offsets[i]:offsets[i + 1]]."""

    flat: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[int]], vocab_size: int) -> Ids:
        return cls.concat([_chunk(rows, id_dtype(vocab_size))])

    @classmethod
    def concat(cls, chunks: list[tuple[np.ndarray, np.ndarray]]) -> Ids:
        """Join (flat ids, row lengths) chunks."""
        flat = np.concatenate([f for f, _ in chunks])
        offsets = np.zeros(sum(len(n) for _, n in chunks) + 1, dtype=np.int64)
        np.cumsum(np.concatenate([n for _, n in chunks]), out=offsets[1:])
        return cls(flat, offsets)


class EncodedSplit:
    """The subword ids of one split, stored flat with offsets, and (for evaluation) its text."""

    def __init__(self, name: str, src: Ids, tgt: Ids, *, sources: list[str] | None = None,
                 references: list[str] | None = None) -> None:
        if src.offsets.size != tgt.offsets.size:
            raise ValueError(f"{src.offsets.size - 1} sources but {tgt.offsets.size - 1} targets")
        self.name = name
        self.src, self.src_offsets = src.flat, src.offsets
        self.tgt, self.tgt_offsets = tgt.flat, tgt.offsets
        self.sources, self.references = sources, references

    def __len__(self) -> int:
        return self.src_offsets.size - 1

    @property
    def src_lengths(self) -> np.ndarray:
        """Padded source lengths: ids + EOS."""
        return np.diff(self.src_offsets) + 1

    @property
    def tgt_lengths(self) -> np.ndarray:
        """Padded target lengths: ids + BOS (tgt_in) or ids + EOS (tgt_out)."""
        return np.diff(self.tgt_offsets) + 1

    def source_ids(self, i: int) -> list[int]:
        return self.src[self.src_offsets[i]:self.src_offsets[i + 1]].tolist()

    def target_ids(self, i: int) -> list[int]:
        return self.tgt[self.tgt_offsets[i]:self.tgt_offsets[i + 1]].tolist()

    def collate(self, indices: np.ndarray | list[int]) -> Batch:
        """The examples at `indices` as one padded batch."""
        indices = np.asarray(indices, dtype=np.int64)
        src = _pad(self.src, self.src_offsets, indices, first=None, last=EOS_ID)
        tgt_in = _pad(self.tgt, self.tgt_offsets, indices, first=BOS_ID, last=None)
        tgt_out = _pad(self.tgt, self.tgt_offsets, indices, first=None, last=EOS_ID)
        return Batch(src, tgt_in, tgt_out, torch.from_numpy(indices),
                     src_tokens=int(self.src_lengths[indices].sum()),
                     tgt_tokens=int(self.tgt_lengths[indices].sum()))


def id_dtype(vocab_size: int) -> type:
    """The smallest dtype that holds every id: uint16 halves the memory of big corpora."""
    return np.uint16 if vocab_size <= np.iinfo(np.uint16).max + 1 else np.int32


def _chunk(rows: Sequence[Sequence[int]], dtype: type) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    return np.fromiter(chain.from_iterable(rows), dtype=dtype, count=int(lengths.sum())), lengths


def _pad(flat: np.ndarray, offsets: np.ndarray, indices: np.ndarray, *, first: int | None,
         last: int | None) -> Tensor:
    """Rows flat[offsets[i]:offsets[i+1]] for i in indices, with an optional token before or
    after each, right-padded with PAD_ID into a (B, width) long tensor."""
    starts, lengths = offsets[indices], offsets[indices + 1] - offsets[indices]
    shift = int(first is not None)
    width = int(lengths.max()) + 1
    positions = np.arange(width)[None, :] - shift  # position within the row's ids
    inside = (positions >= 0) & (positions < lengths[:, None])
    out = np.where(inside, flat[np.where(inside, starts[:, None] + positions, 0)], PAD_ID).astype(np.int64)
    if first is not None:
        out[:, 0] = first
    if last is not None:
        out[np.arange(indices.size), lengths] = last
    return torch.from_numpy(out)


# --- corpus -----------------------------------------------------------------------------------


def split_names(cfg: DataConfig) -> dict[str, str]:
    """Role (train / valid / test) -> split name, the configured one or the source's default."""
    if cfg.source not in LAYOUTS:
        raise UserError(f"data.source {cfg.source!r} is not one of {sorted(LAYOUTS)}")
    defaults = dict(zip(ROLES, LAYOUTS[cfg.source][1:]))
    chosen = {"train": cfg.train_split, "valid": cfg.valid_split, "test": cfg.test_split}
    return {role: chosen[role] or defaults[role] for role in ROLES}


def corpus_folder(cfg: DataConfig) -> Path:
    """The folder that holds a file-based source's SPLIT.LANG[.gz] files."""
    data_dir = resolve_data_dir(cfg.data_dir or None)
    if cfg.source == "files":
        if not cfg.path:
            raise UserError("data.source=files needs data.path: the folder with SPLIT.LANG files")
        folder = Path(cfg.path).expanduser()
        folder = folder if folder.is_absolute() or data_dir is None else data_dir / folder
    else:
        if data_dir is None:
            raise UserError(f"data.source={cfg.source} needs the data directory: set data.data_dir "
                            f"or ZOO_DATA_DIR to the folder that holds {LAYOUTS[cfg.source][0]}/")
        folder = data_dir / LAYOUTS[cfg.source][0]
    if not folder.is_dir():
        hint = " (run python -m tasks.translation.download)" if cfg.source == "wmt14" else ""
        raise UserError(f"{cfg.source} corpus folder not found: {folder}{hint}")
    return folder


def split_files(folder: Path, split: str, src_lang: str, tgt_lang: str) -> tuple[Path, Path]:
    """(source, target) files of a split: SPLIT.LANG.gz if present, else SPLIT.LANG."""
    def find(lang: str) -> Path:
        packed = folder / f"{split}.{lang}.gz"
        return packed if packed.is_file() else require(folder / f"{split}.{lang}", f"'{split}' split ({lang})")
    return find(src_lang), find(tgt_lang)


def load_pairs(cfg: DataConfig, role: str) -> Iterable[tuple[str, str]]:
    """The (source, target) sentence pairs of a role, streamed where they come from files.

    Training pairs over `data.max_words` are dropped (and counted); evaluation pairs are kept
    whole so scores are on the full test set. Pairs with an empty side are always dropped.
    """
    name = split_names(cfg)[role]
    if cfg.source == "synthetic":
        langs = (cfg.src_lang, cfg.tgt_lang)
        if langs not in (("en", "de"), ("de", "en")):
            raise UserError(f"the synthetic corpus is en-de or de-en, not {langs[0]}-{langs[1]}")
        sizes = dict(zip(ROLES, (cfg.synthetic_train, cfg.synthetic_valid, cfg.synthetic_test)))
        pairs = dict(zip(ROLES, synthetic.splits(cfg.synthetic_seed, **sizes)))[role]
        return pairs if langs == ("en", "de") else [(de, en) for en, de in pairs]
    src, tgt = split_files(corpus_folder(cfg), name, cfg.src_lang, cfg.tgt_lang)
    return ParallelText(src, tgt, max_words=cfg.max_words if role == "train" else 0)


# --- tokenizer and encoding -------------------------------------------------------------------


def load_tokenizer(cfg: DataConfig, run_dir: Path, *, seed: int = 0) -> Tokenizer:
    """RUN_DIR/spm.model: copied from `data.tokenizer` if set, else trained on the training
    pairs, unless it is already there (a resumed run keeps its vocabulary)."""
    path = Path(run_dir) / "spm.model"
    if cfg.tokenizer and not path.is_file():
        given = Tokenizer(cfg.tokenizer)  # checks the special ids before copying
        write_atomic(path, given.path.read_bytes())
    if path.is_file():
        log.info("tokenizer: using %s", path)
        return Tokenizer(path)
    sentences = (side for pair in load_pairs(cfg, "train") for side in pair)
    tokenizer = Tokenizer.train(sentences, path, vocab_size=cfg.vocab_size, model_type=cfg.spm_model_type,
                                character_coverage=cfg.spm_character_coverage,
                                max_sentences=cfg.spm_max_sentences, seed=seed)
    log.info("tokenizer: trained %s (%s, %d pieces)", path, cfg.spm_model_type, tokenizer.vocab_size)
    return tokenizer


def encode_split(name: str, pairs: Iterable[tuple[str, str]], tokenizer: Tokenizer, *,
                 max_len: int = 0, keep_text: bool = False) -> EncodedSplit:
    """Encode sentence pairs, dropping (and counting) those longer than `max_len` tokens.

    Args:
        max_len: longest sequence kept on either side, EOS counted (0 = keep all).
        keep_text: keep the raw sentences (for BLEU on evaluation splits).
    """
    dtype = id_dtype(tokenizer.vocab_size)
    src_chunks, tgt_chunks, sources, references = [], [], [], []
    read = dropped = 0
    iterator = iter(pairs)
    while chunk := list(islice(iterator, _ENCODE_CHUNK)):
        read += len(chunk)
        src_rows = tokenizer.encode_batch([src for src, _ in chunk])
        tgt_rows = tokenizer.encode_batch([tgt for _, tgt in chunk])
        if max_len:
            keep = [max(len(s), len(t)) < max_len for s, t in zip(src_rows, tgt_rows)]
            dropped += keep.count(False)
            chunk, src_rows, tgt_rows = ([row for row, k in zip(rows, keep) if k]
                                         for rows in (chunk, src_rows, tgt_rows))
        src_chunks.append(_chunk(src_rows, dtype))
        tgt_chunks.append(_chunk(tgt_rows, dtype))
        if keep_text:
            sources += [src for src, _ in chunk]
            references += [tgt for _, tgt in chunk]
    if read == dropped:
        raise UserError(f"split '{name}' has no sentence pairs left (read {read}, {dropped} longer "
                        f"than data.max_len={max_len} tokens)")
    split = EncodedSplit(name, Ids.concat(src_chunks), Ids.concat(tgt_chunks),
                         sources=sources if keep_text else None,
                         references=references if keep_text else None)
    log.info("%s: %d pairs encoded (%d dropped for more than max_len=%d tokens; 0 = no limit), "
             "%d source and %d target tokens", name, len(split), dropped, max_len,
             split.src_lengths.sum(), split.tgt_lengths.sum())
    return split


# --- the task's data --------------------------------------------------------------------------


class TranslationData:
    """Tokenizer, encoded splits and the batch streams the runner and evaluation read.

    Args:
        cfg: the `data` section.
        run_dir: the run directory (holds spm.model).
        seed: seed of the training order (the run's train.seed).
    """

    def __init__(self, cfg: DataConfig, run_dir: str | Path, *, seed: int = 0) -> None:
        self.cfg, self.seed = cfg, seed
        self.tokenizer = load_tokenizer(cfg, Path(run_dir), seed=seed)
        names = split_names(cfg)
        self.train = encode_split(names["train"], load_pairs(cfg, "train"), self.tokenizer, max_len=cfg.max_len)
        self.valid = encode_split(names["valid"], load_pairs(cfg, "valid"), self.tokenizer, keep_text=True)
        self.test = encode_split(names["test"], load_pairs(cfg, "test"), self.tokenizer, keep_text=True)

    def split(self, role: str) -> EncodedSplit:
        if role not in ROLES:
            raise UserError(f"no split {role!r}: choose one of {ROLES}")
        return getattr(self, role)

    def train_batch_indices(self, epoch: int, *, rank: int = 0, world_size: int = 1) -> list[np.ndarray]:
        """This rank's batches of `epoch` as example indices (the same count on every rank)."""
        batches = token_batches(self.train.src_lengths, self.train.tgt_lengths, self.cfg.max_tokens,
                                seed=self.seed, epoch=epoch)
        return shard(batches, rank, world_size)

    def train_batches(self, epoch: int, *, start: int = 0, rank: int = 0,
                      world_size: int = 1) -> Iterator[Batch]:
        """This rank's batches of `epoch` from its `start`-th on: a deterministic function of
        (seed, epoch), as the runner's Task protocol requires."""
        for indices in self.train_batch_indices(epoch, rank=rank, world_size=world_size)[start:]:
            yield self.train.collate(indices)

    def eval_batches(self, role: str = "valid", *, max_tokens: int = 0) -> Iterator[Batch]:
        """All pairs of a split in length-sorted batches (no shuffling, nothing dropped); use
        `Batch.index` to put outputs back in corpus order.

        Args:
            max_tokens: budget per batch (0 = data.max_tokens), raised to the longest pair's
                length where that is longer, so that no pair is left out.
        """
        split = self.split(role)
        budget = max(max_tokens or self.cfg.max_tokens,
                     int(np.maximum(split.src_lengths, split.tgt_lengths).max()))
        for indices in token_batches(split.src_lengths, split.tgt_lengths, budget, shuffle=False):
            yield split.collate(indices)
