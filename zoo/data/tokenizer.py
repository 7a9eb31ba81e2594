"""A subword vocabulary (SentencePiece), trained on a stream of sentences or loaded from bytes.

The model is held as its serialized bytes, so it can travel inside a checkpoint (the task's
`artifacts()`) as well as in a file; a SentencePiece processor loads either. Every model this
module trains reserves the ids of `SpecialIds`, and every model it loads is checked against them.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import sentencepiece as spm

from zoo.config import UserError
from zoo.data.special import SPECIAL_IDS, SpecialIds

MODEL_TYPES = ("unigram", "bpe")
# SentencePiece's errors: "INTERNAL: src/trainer_interface.cc(638) [condition] message", and for an
# exception raised by Python code it called, "INTERNAL: Type: message\n\nAt:\n  file(line): function".
_STATUS = re.compile(r"^[A-Z_]+: ")
_SOURCE = re.compile(r"^\S+\.cc\(\d+\) (\[.*?\](\s|$))?")


def sentencepiece_message(error: Exception) -> str:
    """SentencePiece's `error` as one line, without its status code, C++ source location and
    condition, or the traceback pybind appends ('' when nothing else is left)."""
    text = _STATUS.sub("", str(error).split("\n\nAt:", 1)[0].strip())
    return " ".join(_SOURCE.sub("", text).split())


class _Sentences(Iterator[str]):
    """The corpus as SentencePiece reads it, counted, keeping the exception it raised: SentencePiece
    would hand that back wrapped in a RuntimeError with the traceback as text."""

    def __init__(self, sentences: Iterable[str]) -> None:
        self.sentences, self.count, self.error = iter(sentences), 0, None

    def __next__(self) -> str:
        try:
            sentence = next(self.sentences)
        except StopIteration:  # the end, not an error
            raise
        except Exception as error:
            self.error = error
            raise
        self.count += 1
        return sentence


class SentencePieceTokenizer:
    """Text <-> subword ids.

    Args:
        model: a serialized SentencePiece model (the bytes of a `.model` file).
        special: the ids the model must reserve.
        origin: where the bytes came from, for error messages.
    """

    def __init__(
        self, model: bytes, *, special: SpecialIds = SPECIAL_IDS, origin: str = "tokenizer model"
    ) -> None:
        self.model = model
        self.special = special
        if not model:  # SentencePiece accepts no bytes as a model of no pieces
            raise UserError(f"{origin}: empty, not a SentencePiece model")
        try:
            self.sp = spm.SentencePieceProcessor(model_proto=model)
        except RuntimeError as err:
            detail = sentencepiece_message(err)  # '' where it names only a parser call
            raise UserError(
                f"{origin}: not a SentencePiece model" + (f" ({detail})" if detail else "")
            ) from None
        found = SpecialIds(self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id())
        if found != special:
            raise UserError(f"{origin}: special ids are {found}, expected {special}")

    @classmethod
    def load(cls, path: str | Path, *, special: SpecialIds = SPECIAL_IDS) -> SentencePieceTokenizer:
        """The tokenizer saved at `path` (a `.model` file)."""
        path = Path(path)
        if not path.is_file():
            raise UserError(f"tokenizer model not found: {path}")
        return cls(path.read_bytes(), special=special, origin=str(path))

    @classmethod
    def train(
        cls,
        sentences: Iterable[str],
        *,
        vocab_size: int,
        model_type: str = "unigram",
        character_coverage: float = 1.0,
        max_sentences: int = 0,
        seed: int = 0,
        special: SpecialIds = SPECIAL_IDS,
    ) -> SentencePieceTokenizer:
        """Train a vocabulary on `sentences` (both languages, for a joint vocabulary).

        Args:
            sentences: an iterable of raw sentences; it is streamed, never written to disk.
            vocab_size: target size including the special ids. A soft limit: a small corpus
                may give fewer pieces.
            model_type: "unigram" or "bpe".
            character_coverage: fraction of characters covered; the rest map to `special.unk`.
            max_sentences: train on a random sample of this many sentences (0 = all).
            seed: seed for that sample.
            special: the ids to reserve.
        """
        if model_type not in MODEL_TYPES:
            raise UserError(f"tokenizer model type {model_type!r} is not one of {MODEL_TYPES}")
        proto, corpus = io.BytesIO(), _Sentences(sentences)
        spm.set_random_generator_seed(seed)
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=corpus,
                model_writer=proto,
                vocab_size=vocab_size,
                model_type=model_type,
                character_coverage=character_coverage,
                input_sentence_size=max_sentences,
                shuffle_input_sentence=max_sentences > 0,
                pad_id=special.pad,
                unk_id=special.unk,
                bos_id=special.bos,
                eos_id=special.eos,
                hard_vocab_limit=False,
                minloglevel=2,
                num_threads=os.cpu_count() or 1,
            )
        except RuntimeError as err:
            if isinstance(corpus.error, UserError):  # the corpus's own message (file, line), as raised
                raise corpus.error from None
            if corpus.error is not None:
                raise UserError(
                    f"tokenizer training failed reading sentence {corpus.count + 1:,}: "
                    f"{type(corpus.error).__name__}: {corpus.error}"
                ) from corpus.error
            if corpus.count == 0:
                raise UserError("tokenizer training failed: no sentences to train on") from None
            # a bare failed check keeps its condition (still one line): all there is to say
            detail = sentencepiece_message(err) or " ".join(_STATUS.sub("", str(err)).split())
            raise UserError(f"tokenizer training failed: {detail}") from None
        return cls(proto.getvalue(), special=special, origin="trained tokenizer")

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        """Subword ids of one sentence, without BOS/EOS (collation adds them)."""
        return self.sp.encode(text)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self.sp.encode(list(texts), num_threads=os.cpu_count() or 1)

    def decode(self, ids: Sequence[int]) -> str:
        """Detokenised text of `ids` up to the first EOS, skipping padding and BOS."""
        ids = [int(i) for i in ids]
        if self.special.eos in ids:
            ids = ids[: ids.index(self.special.eos)]
        return self.sp.decode([i for i in ids if i not in (self.special.pad, self.special.bos)])

    def decode_batch(self, batch: Iterable[Sequence[int]]) -> list[str]:
        return [self.decode(ids) for ids in batch]

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """The subword strings of `ids` (for plot labels)."""
        return [self.sp.id_to_piece(int(i)) for i in ids]
