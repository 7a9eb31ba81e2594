"""The texts of a GPT recipe, one string per document, and the token blocks training reads.

Documents become one token stream, each followed by the end-of-text token (nanoGPT's and GPT-2's
convention: the model learns where documents end, and a block crossing a boundary sees the EOT
that says the text before it is unrelated). The stream is cut into blocks of context + 1 tokens
(inputs, and the same shifted by one as targets); each epoch cuts them from its own offset and
visits them in its own order, both drawn from the epoch's stream of zoo.data.seeding, so a
resumed run sees exactly the batches of an uninterrupted one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from tasks.gpt.config import SOURCES, GPTDataConfig
from tasks.gpt.perplexity import wikitext_articles
from zoo.config import UserError
from zoo.data.batching import shard
from zoo.data.bpe import ByteBPETokenizer
from zoo.data.corpus_split import split_files, synthetic_split
from zoo.data.documents import MARKUP, Document, DocumentReader
from zoo.data.paths import require
from zoo.data.rare_words import UNK, replace_rare, word_counts
from zoo.data.seeding import example_rng

log = logging.getLogger(__name__)
ENCODE_CHUNK = 1024  # documents encoded at a time: ids held as Python lists only for a chunk
BINARY_PROBE = 8000  # bytes looked at for NULs, as git and grep do to call a file binary


@dataclass
class LMBatch:
    """Next-token prediction: `targets` are `ids` shifted by one. Both (B, T) int64."""

    ids: Tensor
    targets: Tensor


class ParagraphReader(DocumentReader):
    """A DocumentReader that keeps paragraphs whole instead of splitting them into sentences: a
    language model reads running text. A document is its title line (when it has one) and its
    paragraph lines; headings and list leftovers (lines of fewer than `min_paragraph_words`
    words) are dropped, and, where `drop_markup`, paragraphs with leftover markup too.

    Args:
        min_paragraph_words: as for DocumentReader.
        drop_markup: drop paragraphs with WikiExtractor's leftovers (formula_3, {{, &lt;).
    """

    def __init__(self, *, min_paragraph_words: int = 0, drop_markup: bool = False) -> None:
        super().__init__(min_paragraph_words=min_paragraph_words)
        self.drop_markup = drop_markup

    def document(self, title: str, paragraphs: list[str]) -> Document | None:
        kept = []
        for paragraph in paragraphs:
            if len(paragraph.split()) < self.min_paragraph_words:
                self.counts.headings += 1
            elif self.drop_markup and MARKUP.search(paragraph):
                self.counts.markup += 1
            else:
                kept.append(paragraph)
        if not kept:
            self.counts.empty_documents += 1
            return None
        self.counts.documents += 1
        return Document(title, [title, *kept] if title else kept)


def _check_text_file(path: Path) -> None:
    """A UserError naming `path` when it is missing, empty or binary (NUL bytes: valid UTF-8 but
    not text); bytes that are not UTF-8 are found by read_lines, with the line."""
    require(path, "text file")
    with open(path, "rb") as f:
        head = f.read(BINARY_PROBE)
    if not head:
        raise UserError(f"{path}: empty file")
    if path.suffix != ".gz" and b"\0" in head:
        raise UserError(f"{path}: a binary file (NUL bytes), not UTF-8 text")


def _file_texts(cfg: GPTDataConfig, path: Path, reader: ParagraphReader) -> list[str]:
    _check_text_file(path)
    if cfg.source == "wikitext":
        return wikitext_articles(path)
    read = reader.wikiextractor if cfg.source == "wikiextractor" else reader.plain_text
    return ["\n".join(document.sentences) for document in read(path)]


def load_texts(cfg: GPTDataConfig, split: str) -> list[str]:
    """read_texts of `split`, with the words the training split has fewer than
    `data.unk_below` times written `<unk>` (zoo.data.rare_words), when that is set."""
    texts = read_texts(cfg, split)
    if cfg.unk_below < 1:
        return texts
    counts = word_counts(texts if split == "train" else read_texts(cfg, "train"))
    texts, replaced, words = replace_rare(texts, counts, cfg.unk_below)
    log.info(
        "%s: %d of %d words (%.2f%%) written %s: seen fewer than %d times in training",
        split, replaced, words, 100 * replaced / max(1, words), UNK, cfg.unk_below,
    )  # fmt: skip
    return texts


def read_texts(cfg: GPTDataConfig, split: str) -> list[str]:
    """One string per document of the recipe's `split` (train | valid; test for the built-in
    corpus, as many documents as valid, generated after them).

    - synthetic: zoo.data.corpus documents, sentences joined by spaces (seeded as BERT's).
    - wikiextractor: the folder's wiki_NN files, `data.valid` held out; a document is its title
      line and its paragraph lines joined by newlines, as the extractor wrote them (not split
      into sentences); headings (lines shorter than data.min_paragraph_words) and paragraphs
      with leftover markup are dropped.
    - text: UTF-8 files, documents separated by blank lines, lines kept (stripped).
    - wikitext: WikiText files, one document per article, detokenized (tasks.gpt.perplexity).

    Raises:
        UserError: a missing, empty, binary or non-UTF-8 file (named, with the line where it
            applies), or a split with no text.
    """
    if cfg.source not in SOURCES:
        raise UserError(f"key 'data.source': {cfg.source!r} is not one of {SOURCES}")
    if cfg.source == "synthetic":
        return [" ".join(d.sentences) for d in synthetic_split(cfg, split)]
    if split not in ("train", "valid"):
        raise UserError(f"data.source={cfg.source} has no {split!r} documents of its own (train, valid)")
    wiki = cfg.source == "wikiextractor"
    reader = ParagraphReader(min_paragraph_words=cfg.min_paragraph_words if wiki else 0, drop_markup=wiki)
    files, texts = split_files(cfg, split), []
    for path in files:
        found = _file_texts(cfg, path, reader)
        if not found and not wiki:  # one wiki_NN file may hold only stubs; a text file may not
            raise UserError(f"{path}: no text (only blank lines or headings)")
        texts.extend(found)
    if not texts:
        raise UserError(f"no {split} text in {[str(f) for f in files]}")
    c = reader.counts
    log.info(
        "%s: %d documents from %d file(s); dropped %d headings/short lines, %d paragraphs with markup, "
        "%d empty documents",
        split, len(texts), len(files), c.headings, c.markup, c.empty_documents,
    )  # fmt: skip
    return texts


def token_stream(texts: list[str], tokenizer: ByteBPETokenizer) -> np.ndarray:
    """The ids of `texts` as one int32 stream, each document followed by EOT (nanoGPT's
    convention; a stream that starts a document does not begin with EOT)."""
    chunks = []
    for start in range(0, len(texts), ENCODE_CHUNK):
        for ids in tokenizer.encode_batch(texts[start : start + ENCODE_CHUNK]):
            chunks.append(np.array([*ids, tokenizer.eot_id], dtype=np.int32))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)


class TokenBlocks:
    """A token stream cut into non-overlapping blocks of `context + 1` tokens: a block's first
    `context` tokens are the inputs and its last `context` the targets.

    Each epoch cuts at its own offset in [0, context) and visits the blocks in its own order,
    both drawn from the epoch's stream (zoo.data.seeding), so successive epochs put block edges
    elsewhere and every epoch is a pure function of (seed, epoch). Tokens before the offset and
    after the last whole block are left out of that epoch.

    Args:
        stream: (N,) token ids.
        context: input tokens per block.
    """

    def __init__(self, stream: np.ndarray, context: int) -> None:
        if context < 1:
            raise ValueError(f"context must be at least 1, not {context}")
        self.stream, self.context = np.asarray(stream), context

    def _epoch(self, epoch: int, seed: int) -> tuple[int, np.ndarray]:
        """(offset, the blocks' order) of `epoch`."""
        rng = example_rng(seed, epoch)
        offset = int(rng.integers(self.context))
        count = max(0, (len(self.stream) - offset) // (self.context + 1))
        return offset, rng.permutation(count)

    def num_batches(self, epoch: int, batch_size: int, *, seed: int, world_size: int = 1) -> int:
        """Micro-batches each rank gets in `epoch`."""
        _, order = self._epoch(epoch, seed)
        return len(order) // batch_size // world_size

    def batches(
        self, epoch: int, batch_size: int, *, seed: int, start: int = 0, rank: int = 0, world_size: int = 1
    ) -> Iterator[LMBatch]:
        """This rank's full micro-batches of `epoch` from its `start`-th on (the ones before are
        neither gathered nor built); every rank gets the same number (zoo.data.batching.shard).

        Raises:
            UserError: the stream makes fewer full batches than there are ranks (checked before
                the first batch is asked for).
        """
        offset, order = self._epoch(epoch, seed)
        groups = [order[i : i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]
        if len(groups) < world_size:
            raise UserError(
                f"{len(self.stream):,} training tokens make {len(order)} blocks of {self.context + 1} "
                f"tokens, {len(groups)} full batch(es) of {batch_size} for {world_size} rank(s): give "
                "more text or lower data.context or data.batch_size"
            )
        return self._gather(offset, shard(groups, rank, world_size)[start:])

    def _gather(self, offset: int, groups: list[np.ndarray]) -> Iterator[LMBatch]:
        width = np.arange(self.context + 1)
        for blocks in groups:
            rows = torch.from_numpy(self.stream[offset + blocks[:, None] * (self.context + 1) + width]).long()
            yield LMBatch(rows[:, :-1].contiguous(), rows[:, 1:].contiguous())
