"""A joint source-target subword vocabulary (SentencePiece), as in the paper's shared BPE vocabulary.

Special ids are fixed for every model this module trains, so models, batches and decoders can
rely on them without asking the tokenizer:

    PAD_ID = 0   padding; never attended to, never predicted
    UNK_ID = 1   a character the vocabulary does not cover
    BOS_ID = 2   starts every decoder input
    EOS_ID = 3   ends every source and every decoder target

The model file (`spm.model`) lives in the run directory, so a checkpoint and its vocabulary
travel together; nothing is written into the repository.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Iterable, Sequence

import sentencepiece as spm

from zoo.config import UserError
from zoo.data.paths import write_atomic

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
MODEL_TYPES = ("unigram", "bpe")


class Tokenizer:
    """Text <-> subword ids with a trained SentencePiece model.

    Args:
        path: a `.model` file written by `Tokenizer.train` (or any SentencePiece model with the
            special ids above).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise UserError(f"tokenizer model not found: {self.path}")
        self.sp = spm.SentencePieceProcessor(model_file=str(self.path))
        found = (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id())
        if found != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise UserError(f"{self.path}: special ids (pad, unk, bos, eos) are {found}, "
                            f"expected {(PAD_ID, UNK_ID, BOS_ID, EOS_ID)}")

    @classmethod
    def train(cls, sentences: Iterable[str], path: str | Path, *, vocab_size: int,
              model_type: str = "unigram", character_coverage: float = 1.0,
              max_sentences: int = 0, seed: int = 0) -> Tokenizer:
        """Train a vocabulary on `sentences` (both languages, for a joint vocabulary) and save it.

        Args:
            sentences: an iterable of raw sentences; it is streamed, never written to disk.
            path: where the model goes; written atomically, so concurrent ranks are safe.
            vocab_size: target vocabulary size including the four special ids. It is a soft
                limit: a small corpus may give fewer pieces.
            model_type: "unigram" or "bpe".
            character_coverage: fraction of characters covered; the rest map to UNK_ID.
            max_sentences: train on a random sample of this many sentences (0 = all).
            seed: seed for that sample.
        """
        if model_type not in MODEL_TYPES:
            raise UserError(f"tokenizer model type {model_type!r} is not one of {MODEL_TYPES}")
        proto = io.BytesIO()
        spm.set_random_generator_seed(seed)
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(sentences), model_writer=proto, vocab_size=vocab_size,
                model_type=model_type, character_coverage=character_coverage,
                input_sentence_size=max_sentences, shuffle_input_sentence=max_sentences > 0,
                pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
                hard_vocab_limit=False, minloglevel=2, num_threads=os.cpu_count() or 1)
        except RuntimeError as err:
            raise UserError(f"tokenizer training failed: {err}") from None
        return cls(write_atomic(Path(path), proto.getvalue()))

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        """Subword ids of one sentence, without BOS/EOS (batching adds them)."""
        return self.sp.encode(text)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self.sp.encode(list(texts), num_threads=os.cpu_count() or 1)

    def decode(self, ids: Sequence[int]) -> str:
        """Detokenised text of `ids` up to the first EOS, skipping PAD and BOS (for sacreBLEU)."""
        ids = [int(i) for i in ids]
        if EOS_ID in ids:
            ids = ids[:ids.index(EOS_ID)]
        return self.sp.decode([i for i in ids if i not in (PAD_ID, BOS_ID)])

    def decode_batch(self, batch: Iterable[Sequence[int]]) -> list[str]:
        return [self.decode(ids) for ids in batch]
