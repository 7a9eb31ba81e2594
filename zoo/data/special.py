"""The special token ids every sequence-to-sequence vocabulary in zoo reserves.

One record, handed to batch collation, the tokenizer and the decoders, so no module declares
its own numbering.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass


@dataclass(frozen=True)
class SpecialIds:
    """pad: padding, never attended to or predicted; unk: a piece the vocabulary lacks;
    bos: starts every decoder input; eos: ends every source and every decoder target."""

    pad: int = 0
    unk: int = 1
    bos: int = 2
    eos: int = 3

    @property
    def reserved(self) -> int:
        """Ids below this are special; ordinary tokens start here."""
        return max(astuple(self)) + 1


SPECIAL_IDS = SpecialIds()
