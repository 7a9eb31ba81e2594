import gzip
import logging
from pathlib import Path

import pytest

from zoo.config import UserError
from zoo.data.text import ParallelText, read_lines


def write(path: Path, lines: list[str] | bytes) -> Path:
    data = lines if isinstance(lines, bytes) else "".join(f"{line}\n" for line in lines).encode()
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_pairs_stream_in_order(tmp_path, suffix):
    src = write(tmp_path / f"a.en{suffix}", ["a cat", " the dog ", "x"])
    tgt = write(tmp_path / f"a.de{suffix}", ["eine Katze", "der Hund", "y"])
    assert list(ParallelText(src, tgt)) == [("a cat", "eine Katze"), ("the dog", "der Hund"), ("x", "y")]


def test_only_newline_splits_lines(tmp_path):
    # A carriage return or U+2028 inside a sentence must not break the alignment.
    src = write(tmp_path / "s", "one\rstill one\u2028more\ntwo\r\n".encode())
    tgt = write(tmp_path / "t", ["eins", "zwei"])
    assert list(ParallelText(src, tgt)) == [("one\rstill one\u2028more", "eins"), ("two", "zwei")]


def test_filtering_is_counted_and_logged(tmp_path, caplog):
    src = write(tmp_path / "s", ["ok", "", "one two three four", "fine", "also fine", "x" * 30])
    tgt = write(tmp_path / "t", ["gut", "leer", "kurz", "", "auch gut", "y"])
    text = ParallelText(src, tgt, max_words=3, max_chars=20)
    with caplog.at_level(logging.INFO, logger="zoo.data.text"):
        pairs = list(text)
    assert pairs == [("ok", "gut"), ("also fine", "auch gut")]
    assert (text.counts.read, text.counts.kept, text.counts.empty, text.counts.too_long) == (6, 2, 2, 2)
    [record] = caplog.records
    assert "read 6 pairs, kept 2, dropped 2 with an empty side and 2 too long" in record.getMessage()


@pytest.mark.parametrize("longer", ["src", "tgt"])
def test_mismatched_line_counts_name_file_and_line(tmp_path, longer):
    long_lines, short_lines = ["a", "b", "c"], ["a", "b"]
    src = write(tmp_path / "s.en", long_lines if longer == "src" else short_lines)
    tgt = write(tmp_path / "t.de", short_lines if longer == "src" else long_lines)
    longer_path = src if longer == "src" else tgt
    with pytest.raises(UserError, match=rf"{longer_path}:3: .*only 2 lines"):
        list(ParallelText(src, tgt))


def test_empty_files_are_errors(tmp_path):
    empty = write(tmp_path / "empty.en", [])
    full = write(tmp_path / "full.de", ["a"])
    with pytest.raises(UserError, match=rf"{empty}: empty file"):
        list(ParallelText(empty, full))
    with pytest.raises(UserError, match=rf"{empty}: empty file"):
        list(ParallelText(full, empty))
    other_empty = write(tmp_path / "empty.de", [])
    with pytest.raises(UserError, match=rf"{empty}: empty file"):
        list(ParallelText(empty, other_empty))


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_bad_utf8_names_file_and_line(tmp_path, suffix):
    src = write(tmp_path / f"s{suffix}", ["fine", "fine"])
    tgt = write(tmp_path / f"t{suffix}", "gut\nsch\xf6n\n".encode("latin-1"))
    with pytest.raises(UserError, match=rf"{tgt}:2: not valid UTF-8"):
        list(ParallelText(src, tgt))


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(UserError, match="not found"):
        list(read_lines(tmp_path / "nope.txt"))
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(UserError, match="not a valid gzip file"):
        list(read_lines(bad))
