"""What the wrappers of Hugging Face `tokenizers` pipelines (byte-level BPE, WordPiece) share:
the pipeline serialises whole to one JSON file (a `tokenizer.json`, which travels inside every
checkpoint of a run), and text encodes without the special tokens a post-processor would add.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from tokenizers import Tokenizer

from zoo.config import UserError

T = TypeVar("T", bound="HFTokenizer")


class HFTokenizer:
    """Text <-> ids through a `tokenizers.Tokenizer`; a subclass checks the pipeline is its kind.

    Args:
        tokenizer: the pipeline.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer

    @classmethod
    def from_bytes(cls: type[T], data: bytes, *, source: str = "") -> T:
        """The tokenizer `to_bytes` wrote (or any `tokenizer.json` of this kind); `source` (the
        file or checkpoint it came from) starts the error of a corrupt one or one of another kind."""
        where = f"{source}: " if source else ""
        try:
            tokenizer = Tokenizer.from_str(data.decode("utf-8"))
        except Exception as error:  # bad UTF-8, or tokenizers' own exception on bad JSON
            raise UserError(f"{where}not a tokenizers JSON file ({error})") from None
        try:
            return cls(tokenizer)
        except UserError as error:  # a pipeline of another kind
            raise UserError(f"{where}{error}") from None

    @classmethod
    def from_json_file(cls: type[T], path: Path) -> T:
        """The `tokenizer.json` at `path`; its errors name it."""
        if not path.is_file():
            raise UserError(f"tokenizer not found: {path}")
        return cls.from_bytes(path.read_bytes(), source=str(path))

    def to_bytes(self) -> bytes:
        """The whole pipeline (normaliser, pre-tokeniser, model, decoder) as tokenizers' JSON."""
        return self.tokenizer.to_str().encode("utf-8")

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    def tokens(self) -> list[str]:
        """Every token, in id order (byte-level BPE's as its printable byte characters)."""
        by_id = {i: t for t, i in self.tokenizer.get_vocab(with_added_tokens=True).items()}
        return [by_id[i] for i in range(len(by_id))]

    def encode(self, text: str) -> list[int]:
        """The ids of `text`, without special tokens (BERT's example builder adds [CLS]/[SEP])."""
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]
