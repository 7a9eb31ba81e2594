"""tasks.gpt.generation.TextStream: what one streamed prompt writes to the terminal, token by
token as generate hands them over, with a character split across byte-level tokens held back
until it is whole."""

from __future__ import annotations

import pytest

from tasks.gpt.generation import TextStream
from zoo.data.bpe import ByteBPETokenizer

TEXT = "the cat é hat"


@pytest.fixture(scope="module")
def tokenizer() -> ByteBPETokenizer:
    # ASCII only: "é" (two UTF-8 bytes) has no merge, so it is two byte-level tokens.
    return ByteBPETokenizer.train(["the cat sat on the mat", "a hat, a cat!"] * 20, 300, min_frequency=1)


def test_text_is_written_as_each_token_arrives_and_a_split_character_once_whole(tokenizer):
    ids = tokenizer.encode(TEXT)
    first_byte = ids.index(tokenizer.encode("é")[0])
    assert ids[first_byte : first_byte + 2] == tokenizer.encode("é")  # split across two tokens
    pieces: list[str] = []
    stream = TextStream(tokenizer, pieces.append)
    for i, token in enumerate(ids):
        stream(token)
        # Everything that decodes whole so far is out already; the first byte of "é" is held.
        whole = ids[:i] if i == first_byte else ids[: i + 1]
        assert "".join(pieces) == tokenizer.decode(whole), i
    assert pieces[first_byte] == "é"  # one piece, written with the token that completed it
    assert not any("\ufffd" in piece for piece in pieces)
    stream(tokenizer.eot_id)  # the end of the text is not part of it
    stream.flush()
    assert "".join(pieces) == TEXT and len(pieces) == len(ids) - 1
