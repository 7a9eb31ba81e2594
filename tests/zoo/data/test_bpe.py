"""Byte-level BPE: the ids of transformers' GPT-2 tokenizer, a vocabulary laid out as GPT-2's,
exact round trips through text, bytes and Hugging Face files.

GPT-2's real vocab.json and merges.txt cannot be downloaded here (no network), so the parity
tests train a small vocabulary on the text below, write it in GPT-2's file formats, and compare
`from_gpt2_files` on those files with `GPT2TokenizerFast` on the same files: the path that reads
GPT-2's own files unchanged.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tokenizers import pre_tokenizers
from transformers import AutoTokenizer, GPT2TokenizerFast

from zoo.config import UserError
from zoo.data.bpe import EOT, ByteBPETokenizer
from zoo.data.wordpiece import WordPieceTokenizer

CORPUS = [
    "The town lies on the banks of the river. It's known for its pottery, and they've kept it since 1820.",
    "Café au lait, crème brûlée and the naïve façade of the hôtel: résumé of a piñata's day in São Paulo.",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다。",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας. Το φως της Αθήνας.",
    "Emoji travel too: 😀 🚀 👍🏽 and ❤️ mixed with text, plus math ∑ x² ≤ ∞.",
    "Lines\nwith\n\nnewlines,\ttabs and    several   spaces, and trailing spaces   ",
    "Numbers 3.14159, 2,000,000 and dates 2019-02-14; code: def f(x): return x ** 2",
    "First document ends here.<|endoftext|>A second one starts after the end-of-text token.",
] * 5
SAMPLES = [
    "Hello world",
    " leading space and trailing space ",
    "Café crème brûlée, naïve résumé",
    "東京は日本の首都です。",
    "Ελληνικά: η Αθήνα",
    "emoji 😀🚀 👍🏽 ❤️",
    "two  spaces,   three, then\n\nnew lines\r\nand\ttabs",
    "before<|endoftext|>after <|endoftext|> spaced",
    "<|endoftext|>",
    "they'll say it's John's, we've I'm you'd",
    "unseen bytes: \x00\x7f\u00a0 ¿¡ ƒ",
    "",
]


@pytest.fixture(scope="module")
def trained() -> ByteBPETokenizer:
    return ByteBPETokenizer.train(CORPUS, 400)


@pytest.fixture(scope="module")
def hf_dir(trained: ByteBPETokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("hf")
    trained.save_hf_files(directory, max_len=64)
    return directory


@pytest.fixture(scope="module")
def gpt2_files(hf_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with only vocab.json and merges.txt, as GPT-2's original release."""
    directory = tmp_path_factory.mktemp("gpt2")
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(hf_dir / name, directory / name)
    return directory


def test_ids_equal_gpt2_tokenizer_fast_on_gpt2_files(trained: ByteBPETokenizer, gpt2_files: Path):
    ours = ByteBPETokenizer.from_gpt2_files(gpt2_files / "vocab.json", gpt2_files / "merges.txt")
    # transformers 5 ignores GPT2TokenizerFast(vocab_file=..., merges_file=...) (an empty
    # vocabulary); from_pretrained on a folder of the two files reads them in 4 and 5 alike.
    theirs = GPT2TokenizerFast.from_pretrained(gpt2_files)
    assert len(theirs) == ours.vocab_size == trained.vocab_size
    assert theirs.eos_token_id == ours.eot_id
    for text in SAMPLES + CORPUS[:8]:
        expected = theirs(text)["input_ids"]
        assert ours.encode(text) == expected, text
        assert trained.encode(text) == expected, text
    assert ours.encode_batch(SAMPLES) == [theirs(t)["input_ids"] for t in SAMPLES]
    assert ours.to_bytes() == trained.to_bytes()  # the files hold the whole tokenizer


def test_vocabulary_is_laid_out_as_gpt2s(trained: ByteBPETokenizer):
    tokens = trained.tokens()
    assert trained.vocab_size == 400 and len(tokens) == 400
    assert tokens[:256] == sorted(pre_tokenizers.ByteLevel.alphabet())  # GPT-2's byte order
    assert (tokens[198], tokens[220]) == ("Ċ", "Ġ")  # "\n" and " ", GPT-2's ids
    assert trained.eot_id == 399 and tokens[-1] == EOT
    assert trained.encode(EOT) == [trained.eot_id]
    assert not any("endoftext" in t for t in tokens[:-1])  # EOT in the corpus taught no merges


def test_training_is_deterministic(trained: ByteBPETokenizer):
    assert ByteBPETokenizer.train(CORPUS, 400).to_bytes() == trained.to_bytes()


def test_decode_inverts_encode(trained: ByteBPETokenizer):
    for text in SAMPLES + CORPUS[:8]:
        assert trained.decode(trained.encode(text)) == text


def test_save_hf_files_round_trip(trained: ByteBPETokenizer, hf_dir: Path):
    assert {p.name for p in hf_dir.iterdir()} == {
        "vocab.json",
        "merges.txt",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    }
    for hf in (GPT2TokenizerFast.from_pretrained(hf_dir), AutoTokenizer.from_pretrained(hf_dir)):
        assert len(hf) == trained.vocab_size and hf.model_max_length == 64
        assert hf.eos_token_id == hf.bos_token_id == trained.eot_id
        for text in SAMPLES:
            ids = hf(text)["input_ids"]
            assert ids == trained.encode(text), text
            assert hf.decode(ids) == text


def test_bytes_and_paths_round_trip(
    trained: ByteBPETokenizer, hf_dir: Path, gpt2_files: Path, tmp_path: Path
):
    (tmp_path / "tokenizer.json").write_bytes(trained.to_bytes())
    loaded = [
        ByteBPETokenizer.from_bytes(trained.to_bytes()),
        ByteBPETokenizer.from_path(tmp_path / "tokenizer.json"),
        ByteBPETokenizer.from_path(tmp_path),  # a run directory
        ByteBPETokenizer.from_path(hf_dir),
        ByteBPETokenizer.from_path(gpt2_files),
    ]
    for tokenizer in loaded:
        assert tokenizer.eot_id == trained.eot_id and tokenizer.vocab_size == trained.vocab_size
        assert tokenizer.encode_batch(SAMPLES) == trained.encode_batch(SAMPLES)


def test_from_path_errors_are_one_line(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "bad.json").write_text("{not json")
    wordpiece = WordPieceTokenizer.whole_words(["a small text"])
    (tmp_path / "bert.json").write_bytes(wordpiece.to_bytes())
    cases = {
        tmp_path / "missing.json": "tokenizer not found",
        empty: "holds neither tokenizer.json nor vocab.json",
        tmp_path / "bad.json": "not a tokenizers JSON file",
        tmp_path / "bert.json": "not a byte-level BPE",
    }
    for path, message in cases.items():
        with pytest.raises(UserError, match=message) as error:
            ByteBPETokenizer.from_path(path)
        assert str(path) in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(UserError, match="GPT-2 tokenizer file not found"):
        ByteBPETokenizer.from_gpt2_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    with pytest.raises(UserError, match="at least 257"):
        ByteBPETokenizer.train(["text"], 200)


@pytest.mark.data
def test_ids_equal_gpt2_tokenizer_fast_on_real_text(data_dir: Path, tmp_path: Path):
    """The same parity on real English Wikipedia text, non-ASCII included, with a vocabulary of
    GPT-2's kind (thousands of merges) trained on other documents of the same file."""
    documents = (data_dir / "enwiki-extract" / "wiki_29").read_text(encoding="utf-8").split("</doc>")[:-1]
    held_out = documents[-8:]
    assert any(not text.isascii() for text in held_out)
    trained = ByteBPETokenizer.train(documents[:-8], 4000)
    trained.save_hf_files(tmp_path / "hf", max_len=1024)
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(tmp_path / "hf" / name, gpt2 / name)
    ours = ByteBPETokenizer.from_gpt2_files(gpt2 / "vocab.json", gpt2 / "merges.txt")
    theirs = GPT2TokenizerFast.from_pretrained(gpt2)
    for text in held_out:
        assert ours.encode(text) == theirs(text)["input_ids"]
