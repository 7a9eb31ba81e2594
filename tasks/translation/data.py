"""Translation data: corpus -> joint subword vocabulary -> id arrays -> token-bucketed batches.

Sources (`data.source`):
    synthetic  the built-in generated corpus (tasks/translation/synthetic.py); no files
    multi30k   DATA_DIR/multi30k/{train,val,test_2016_flickr}.{en,de}.gz
    wmt14      DATA_DIR/wmt14/{train,newstest2013,newstest2014}.{en,de}, written by
               `python -m tasks.translation.download`
    files      any folder of SPLIT.LANG or SPLIT.LANG.gz files (`data.path`)

Storage, padding and collation are zoo.data.seq2seq's (sources end with EOS; the decoder reads
BOS y and predicts y EOS); the vocabulary is zoo.data.tokenizer's SentencePiece model.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np

from tasks.translation import synthetic
from tasks.translation.config import DataConfig
from zoo.config import UserError
from zoo.data.batching import shard, token_batches
from zoo.data.paths import require, resolve_data_dir, write_atomic
from zoo.data.seq2seq import Ids, Seq2SeqBatch, SequencePairs, chunk, id_dtype
from zoo.data.special import SPECIAL_IDS
from zoo.data.text import ParallelText
from zoo.data.tokenizer import SentencePieceTokenizer

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
class EncodedSplit:
    """The subword ids of one split and, for evaluation splits, its text."""

    name: str
    pairs: SequencePairs
    sources: list[str] | None = None
    references: list[str] | None = None

    def __len__(self) -> int:
        return len(self.pairs)


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
            raise UserError(
                f"data.source={cfg.source} needs the data directory: set data.data_dir "
                f"or ZOO_DATA_DIR to the folder that holds {LAYOUTS[cfg.source][0]}/"
            )
        folder = data_dir / LAYOUTS[cfg.source][0]
    if not folder.is_dir():
        hint = " (run python -m tasks.translation.download)" if cfg.source == "wmt14" else ""
        raise UserError(f"{cfg.source} corpus folder not found: {folder}{hint}")
    return folder


def split_files(folder: Path, split: str, src_lang: str, tgt_lang: str) -> tuple[Path, Path]:
    """(source, target) files of a split: SPLIT.LANG.gz if present, else SPLIT.LANG."""

    def find(lang: str) -> Path:
        packed = folder / f"{split}.{lang}.gz"
        return (
            packed if packed.is_file() else require(folder / f"{split}.{lang}", f"'{split}' split ({lang})")
        )

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


def load_tokenizer(cfg: DataConfig, run_dir: Path, *, seed: int = 0) -> SentencePieceTokenizer:
    """RUN_DIR/spm.model: copied from `data.tokenizer` if set, else trained on the training
    pairs, unless it is already there (a resumed run keeps its vocabulary)."""
    path = Path(run_dir) / "spm.model"
    if not path.is_file():
        if cfg.tokenizer:
            tokenizer = SentencePieceTokenizer.load(cfg.tokenizer)  # checks the special ids first
        else:
            sentences = (side for pair in load_pairs(cfg, "train") for side in pair)
            tokenizer = SentencePieceTokenizer.train(
                sentences,
                vocab_size=cfg.vocab_size,
                model_type=cfg.spm_model_type,
                character_coverage=cfg.spm_character_coverage,
                max_sentences=cfg.spm_max_sentences,
                seed=seed,
            )
            log.info("tokenizer: trained %s (%s, %d pieces)", path, cfg.spm_model_type, tokenizer.vocab_size)
        write_atomic(path, tokenizer.model)
        return tokenizer
    log.info("tokenizer: using %s", path)
    return SentencePieceTokenizer.load(path)


def cut_to_positions(rows: list[list[int]], positions: int) -> tuple[list[list[int]], list[int]]:
    """`rows` with each row cut to `positions - 1` ids (the EOS or BOS added later takes the last
    position), and the indices of the rows that were cut."""
    cut = [i for i, row in enumerate(rows) if len(row) >= positions]
    return ([row[: positions - 1] for row in rows] if cut else rows), cut


def _filter_chunk(
    part: list[tuple[str, str]], tokenizer: SentencePieceTokenizer, max_len: int, truncate: int
) -> tuple[list[tuple[str, str]], list[list[int]], list[list[int]], int, int]:
    """One chunk of pairs encoded: the pairs kept, their source and target ids, how many were
    dropped for `max_len` and how many of those kept were cut to `truncate` positions."""
    src_rows = tokenizer.encode_batch([src for src, _ in part])
    tgt_rows = tokenizer.encode_batch([tgt for _, tgt in part])
    dropped = truncated = 0
    if max_len:
        keep = [max(len(s), len(t)) < max_len for s, t in zip(src_rows, tgt_rows)]
        dropped = keep.count(False)
        part, src_rows, tgt_rows = (
            [row for row, k in zip(rows, keep) if k] for rows in (part, src_rows, tgt_rows)
        )
    if truncate:
        (src_rows, src_cut), (tgt_rows, tgt_cut) = (
            cut_to_positions(rows, truncate) for rows in (src_rows, tgt_rows)
        )
        truncated = len(set(src_cut) | set(tgt_cut))
    return part, src_rows, tgt_rows, dropped, truncated


def _log_split(split: EncodedSplit, dropped: int, max_len: int, truncated: int, truncate: int) -> None:
    """What encoding kept, dropped and cut."""
    name = split.name
    if truncated:
        log.warning(
            "%s: %d of %d pairs have a side longer than the model's %d positions: cut to "
            "fit (the references are scored whole)",
            name,
            truncated,
            len(split),
            truncate,
        )
    log.info(
        "%s: %d pairs encoded (%d dropped for more than max_len=%d tokens; 0 = no limit), "
        "%d source and %d target tokens",
        name,
        len(split),
        dropped,
        max_len,
        split.pairs.src_lengths.sum(),
        split.pairs.tgt_lengths.sum(),
    )


def encode_split(
    name: str,
    pairs: Iterable[tuple[str, str]],
    tokenizer: SentencePieceTokenizer,
    *,
    max_len: int = 0,
    truncate: int = 0,
    keep_text: bool = False,
) -> EncodedSplit:
    """Encode sentence pairs, dropping (and counting) those longer than `max_len` tokens.

    Args:
        max_len: longest sequence kept on either side, EOS counted (0 = keep all): training.
        truncate: the model's position table: longer sides are cut to fit, with a warning that
            counts them (0 = no cut). Evaluation splits keep every pair, so a score is always
            on the whole split; their text (the references) stays whole.
        keep_text: keep the raw sentences (for BLEU on evaluation splits).
    """
    dtype = id_dtype(tokenizer.vocab_size)
    src_chunks, tgt_chunks, sources, references = [], [], [], []
    read = dropped = truncated = 0
    iterator = iter(pairs)
    while part := list(islice(iterator, _ENCODE_CHUNK)):
        read += len(part)
        part, src_rows, tgt_rows, chunk_dropped, chunk_truncated = _filter_chunk(
            part, tokenizer, max_len, truncate
        )
        dropped, truncated = dropped + chunk_dropped, truncated + chunk_truncated
        src_chunks.append(chunk(src_rows, dtype))
        tgt_chunks.append(chunk(tgt_rows, dtype))
        if keep_text:
            sources += [src for src, _ in part]
            references += [tgt for _, tgt in part]
    if read == dropped:
        raise UserError(
            f"split '{name}' has no sentence pairs left (read {read}, {dropped} longer "
            f"than data.max_len={max_len} tokens)"
        )
    split = EncodedSplit(
        name,
        SequencePairs(Ids.concat(src_chunks), Ids.concat(tgt_chunks)),
        sources=sources if keep_text else None,
        references=references if keep_text else None,
    )
    _log_split(split, dropped, max_len, truncated, truncate)
    return split


# --- the task's data --------------------------------------------------------------------------


class TranslationData:
    """Tokenizer, encoded splits and the batch streams the runner and evaluation read.

    Args:
        cfg: the `data` section.
        run_dir: the run directory (holds spm.model).
        seed: seed of the training order (the run's train.seed).
        rank, world_size: this process's share of the training batches.
        positions: the model's position table (model.max_len): longer evaluation sentences are
            cut to fit (0 = no cut).
    """

    def __init__(
        self,
        cfg: DataConfig,
        run_dir: str | Path,
        *,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        positions: int = 0,
    ) -> None:
        self.cfg, self.seed, self.rank, self.world_size = cfg, seed, rank, world_size
        self.special = SPECIAL_IDS
        self.tokenizer = load_tokenizer(cfg, Path(run_dir), seed=seed)
        names = split_names(cfg)
        self.train = encode_split(
            names["train"], load_pairs(cfg, "train"), self.tokenizer, max_len=cfg.max_len
        )
        self.valid, self.test = (
            encode_split(
                names[role], load_pairs(cfg, role), self.tokenizer, truncate=positions, keep_text=True
            )
            for role in ("valid", "test")
        )

    def split(self, role: str) -> EncodedSplit:
        if role not in ROLES:
            raise UserError(f"no split {role!r}: choose one of {ROLES}")
        return getattr(self, role)

    def train_batch_indices(self, epoch: int) -> list[np.ndarray]:
        """This rank's batches of `epoch` as example indices (the same count on every rank)."""
        pairs = self.train.pairs
        batches = token_batches(
            pairs.src_lengths, pairs.tgt_lengths, self.cfg.max_tokens, seed=self.seed, epoch=epoch
        )
        return shard(batches, self.rank, self.world_size)

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[Seq2SeqBatch]:
        """This rank's batches of `epoch` from its `start`-th on: a deterministic function of
        (seed, epoch, rank), as the runner's Task protocol requires."""
        for indices in self.train_batch_indices(epoch)[start:]:
            yield self.train.pairs.collate(indices, self.special)

    def eval_batches(self, role: str = "valid", *, max_tokens: int = 0) -> Iterator[Seq2SeqBatch]:
        """All pairs of a split in length-sorted batches (no shuffling, nothing dropped).

        Args:
            max_tokens: budget per batch (0 = data.max_tokens), raised to the longest pair's
                length where that is longer, so that no pair is left out.
        """
        pairs = self.split(role).pairs
        budget = max(
            max_tokens or self.cfg.max_tokens, int(np.maximum(pairs.src_lengths, pairs.tgt_lengths).max())
        )
        for indices in token_batches(pairs.src_lengths, pairs.tgt_lengths, budget, shuffle=False):
            yield pairs.collate(indices, self.special)
