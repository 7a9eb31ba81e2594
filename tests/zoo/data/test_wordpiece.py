"""WordPiece parity with transformers' BertTokenizerFast on the same vocabulary."""

from __future__ import annotations

import pytest
from transformers import BertTokenizerFast

from zoo.config import UserError
from zoo.data.wordpiece import SPECIAL_TOKENS, WordPieceTokenizer

TRAIN = [
    "The quick brown fox jumps over the lazy dog.",
    "Zürich lies on the Limmat river.",
    "Tokenizers split unseen words into word pieces, like unbelievably.",
    "Numbers such as 1,234.5 and dates like 12/05/1999 appear too.",
] * 20
PROBES = [
    "The QUICK brown fox!",
    "Café naïve résumé Zürich",
    "unbelievably-long-hyphenated words",
    "東京 is Tokyo; 北京 is Beijing.",
    "a [MASK] b [SEP] c",
    "tabs\tand  double  spaces",
    "x" * 120,
    "emoji 🙂 and control\u0007chars",
    "",
]


@pytest.mark.parametrize("lowercase", [True, False])
def test_ids_equal_bert_tokenizer_fast(tmp_path, lowercase):
    ours = WordPieceTokenizer.train(TRAIN, vocab_size=200, lowercase=lowercase, min_frequency=1)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(ours.vocab_text())
    reference = BertTokenizerFast.from_pretrained(tmp_path, do_lower_case=lowercase)
    from_vocab = WordPieceTokenizer.from_vocab(vocab, lowercase=lowercase)
    for text in PROBES:
        expected = reference(text, add_special_tokens=False)["input_ids"]
        assert from_vocab.encode(text) == expected, text
        assert ours.encode(text) == expected, text
    assert ours.lowercase is lowercase and from_vocab.lowercase is lowercase


def test_special_ids_and_round_trip():
    ours = WordPieceTokenizer.train(TRAIN, vocab_size=200, min_frequency=1)
    assert [ours.pad_id, ours.unk_id, ours.cls_id, ours.sep_id, ours.mask_id] == list(range(5))
    assert ours.tokens()[:5] == list(SPECIAL_TOKENS)
    loaded = WordPieceTokenizer.from_bytes(ours.to_bytes())
    assert loaded.encode_batch(PROBES) == ours.encode_batch(PROBES)
    ids = ours.encode("quick rivers")  # "rivers" is unseen: "river" "##s"
    assert ours.decode(ids) == "quick rivers"
    assert [ours.is_continuation[i] for i in ids] == [False, False, True]


def test_load_reads_a_json_a_vocab_or_a_directory_holding_one(tmp_path):
    ours = WordPieceTokenizer.train(TRAIN, vocab_size=200, lowercase=False, min_frequency=1)
    run, checkpoint = tmp_path / "run", tmp_path / "hf"
    run.mkdir(), checkpoint.mkdir()
    (run / "tokenizer.json").write_bytes(ours.to_bytes())
    (checkpoint / "vocab.txt").write_text(ours.vocab_text())
    expected = ours.encode_batch(PROBES)
    for source in (run, run / "tokenizer.json", checkpoint, checkpoint / "vocab.txt"):
        assert WordPieceTokenizer.load(source, lowercase=False).encode_batch(PROBES) == expected, source
    (run / "tokenizer.json").write_text("{not json")
    with pytest.raises(UserError, match="tokenizer.json: not a tokenizers JSON"):
        WordPieceTokenizer.load(run)
    with pytest.raises(UserError, match="neither tokenizer.json nor vocab.txt"):
        WordPieceTokenizer.load(tmp_path)


def test_a_corrupt_tokenizer_json_is_one_line_naming_the_problem(tmp_path):
    """A damaged tokenizer.json (a resumed run's, a checkpoint's) is a UserError, not tokenizers' own
    exception; read from a file, the message names the file."""
    whole = WordPieceTokenizer.whole_words(["a small text"]).to_bytes()
    for data in (b"{not json", b"\xff\xfe", whole[: len(whole) // 2]):
        with pytest.raises(UserError, match="not a tokenizers JSON file"):
            WordPieceTokenizer.from_bytes(data)
    saved = tmp_path / "tokenizer.json"
    saved.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(UserError, match="not a tokenizers JSON file") as error:
        WordPieceTokenizer.from_json_file(saved)
    assert str(error.value).startswith(f"{saved}: ") and "\n" not in str(error.value)
    with pytest.raises(UserError, match=r"^run/best\.pt: tokenizer\.json: not a tokenizers JSON file"):
        WordPieceTokenizer.from_bytes(b"{not json", source="run/best.pt: tokenizer.json")  # a checkpoint's


def test_a_vocab_txt_without_the_special_tokens_names_the_file_and_the_missing_ones(tmp_path):
    """tokenizers itself fails on the first one missing, with a TypeError."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\nhello\nworld\n##s\n")
    with pytest.raises(UserError) as error:
        WordPieceTokenizer.load(vocab)
    message = str(error.value)
    assert message.startswith(f"{vocab}: ") and "\n" not in message
    assert "lacks the special tokens [CLS] [SEP] [MASK]" in message
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]  \nhello\n")  # trailing blanks: as tokenizers reads
    assert WordPieceTokenizer.load(vocab).mask_id == 4
