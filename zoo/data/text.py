"""Aligned parallel plain-text corpora: line i of the source file translates line i of the target.

Files are UTF-8, one sentence per line, optionally gzip-compressed (by the `.gz` suffix). They are
streamed, never loaded whole, so a 4.5M-line corpus costs no more memory than a 29k-line one.
Lines are split on "\\n" only: a stray "\\r" or Unicode line separator inside a sentence (both
occur in web-crawled corpora) must not shift the alignment.
"""

from __future__ import annotations

import gzip
import logging
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import IO

from zoo.config import UserError

log = logging.getLogger(__name__)


@dataclass
class FilterCounts:
    """What a pass over a corpus read, kept and dropped (and why)."""

    read: int = 0
    kept: int = 0
    empty: int = 0
    too_long: int = 0


def _open(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def read_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 text file (gzip by suffix), without the line ending, stripped.

    Raises:
        UserError: the file is missing, is not valid gzip, or a line is not valid UTF-8; the
            message names the file and the line number.
    """
    try:
        with _open(path) as f:
            yield from decode_lines(f, str(path))
    except FileNotFoundError:
        raise UserError(f"corpus file not found: {path}") from None
    except (gzip.BadGzipFile, EOFError) as err:
        raise UserError(f"{path}: not a valid gzip file ({err})") from None


def decode_lines(lines: Iterable[bytes | str], name: str) -> Iterator[str]:
    """Each line decoded as UTF-8 and stripped (text lines pass as they are); a line that is
    not UTF-8 is a UserError naming `name` and the line number."""
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, str):
            yield raw.strip()
            continue
        try:
            yield raw.decode("utf-8").strip()
        except UnicodeDecodeError as err:
            raise UserError(f"{name}:{number}: not valid UTF-8 ({err.reason} at byte {err.start})") from None


def stdin_lines() -> Iterator[str]:
    """The lines of standard input, read as bytes and decoded one by one (see decode_lines)."""
    return decode_lines(getattr(sys.stdin, "buffer", sys.stdin), "stdin")


class ParallelText:
    """Sentence pairs from two aligned files, validated and filtered while they stream.

    Pairs with an empty side are dropped, and so are pairs with a side longer than `max_words`
    whitespace-separated words or `max_chars` characters (0 turns a limit off). Each pass counts
    what it dropped in `self.counts` and logs one line when it ends.

    Raises (while iterating):
        UserError: a file is empty, the files have different line counts, or a line is not
            valid UTF-8; the message names the file and the line number.
    """

    def __init__(self, src: Path, tgt: Path, *, max_words: int = 0, max_chars: int = 0) -> None:
        self.src, self.tgt = Path(src), Path(tgt)
        self.max_words, self.max_chars = max_words, max_chars
        self.counts = FilterCounts()

    def _too_long(self, text: str) -> bool:
        return (self.max_chars > 0 and len(text) > self.max_chars) or (
            self.max_words > 0 and len(text.split()) > self.max_words
        )

    def __iter__(self) -> Iterator[tuple[str, str]]:
        counts = self.counts = FilterCounts()
        for src, tgt in zip_longest(read_lines(self.src), read_lines(self.tgt)):
            if src is None or tgt is None:
                shorter, longer = (self.src, self.tgt) if src is None else (self.tgt, self.src)
                _mismatch(shorter, longer, counts.read)
            counts.read += 1
            if not src or not tgt:
                counts.empty += 1
            elif self._too_long(src) or self._too_long(tgt):
                counts.too_long += 1
            else:
                counts.kept += 1
                yield src, tgt
        if counts.read == 0:
            raise UserError(f"{self.src}: empty file (and {self.tgt})")
        log.info(
            "%s | %s: read %d pairs, kept %d, dropped %d with an empty side and %d too long "
            "(max_words=%d, max_chars=%d)",
            self.src,
            self.tgt,
            counts.read,
            counts.kept,
            counts.empty,
            counts.too_long,
            self.max_words,
            self.max_chars,
        )


def _mismatch(shorter: Path, longer: Path, common: int) -> None:
    if common == 0:
        raise UserError(f"{shorter}: empty file (but {longer} is not)")
    raise UserError(
        f"{longer}:{common + 1}: line has no partner: {shorter} has only {common} "
        "lines (parallel files must have equal line counts)"
    )
