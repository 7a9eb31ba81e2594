import random

import pytest
import torch

from zoo.config import UserError
from zoo.data.special import SPECIAL_IDS, SpecialIds
from zoo.data.tokenizer import SentencePieceTokenizer, sentencepiece_message

PAD, UNK, BOS, EOS = SPECIAL_IDS.pad, SPECIAL_IDS.unk, SPECIAL_IDS.bos, SPECIAL_IDS.eos
ORDINARY = [
    "Two young, White males are outside near many bushes.",
    "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
    "A man in a blue shirt is standing on a ladder (cleaning a window) at 3 p.m.",
    "Ein Mann in einem blauen Hemd steht auf einer Leiter und putzt ein Fenster.",
    "Das Mädchen läuft über die Straße; der Hund wartet vor dem Geschäft!",
    'Is it 25% cheaper? "Yes", she said - it\'s 4.50 euros.',
]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    """The sentences above, and 2,000 random sentences over their words."""
    words = " ".join(ORDINARY).split()
    rng = random.Random(0)
    return [" ".join(rng.choices(words, k=rng.randint(3, 15))) for _ in range(2000)] + ORDINARY * 20


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_round_trip_and_special_ids(corpus, model_type):
    tok = SentencePieceTokenizer.train(iter(corpus), vocab_size=400, model_type=model_type)
    assert (tok.sp.pad_id(), tok.sp.unk_id(), tok.sp.bos_id(), tok.sp.eos_id()) == (PAD, UNK, BOS, EOS)
    assert 100 < tok.vocab_size <= 400
    for text in ORDINARY + corpus[:50]:
        ids = tok.encode(text)
        assert ids and min(ids) >= SPECIAL_IDS.reserved and UNK not in ids
        assert tok.decode(ids) == text
    assert tok.encode_batch(ORDINARY) == [tok.encode(t) for t in ORDINARY]


def test_decode_stops_at_eos_and_skips_padding(corpus):
    tok = SentencePieceTokenizer.train(corpus, vocab_size=300)
    first, second = (tok.encode(t) for t in ORDINARY[:2])
    row = torch.tensor([BOS, *first, EOS, *second, PAD, PAD])
    assert tok.decode(row) == ORDINARY[0]
    assert tok.decode_batch([[BOS, *second, EOS], second + [PAD]]) == [ORDINARY[1]] * 2


def test_bytes_and_files_load_back_identically(tmp_path, corpus):
    trained = SentencePieceTokenizer.train(corpus, vocab_size=300, seed=1)
    (tmp_path / "spm.model").write_bytes(trained.model)
    for loaded in (
        SentencePieceTokenizer(trained.model),
        SentencePieceTokenizer.load(tmp_path / "spm.model"),
    ):
        assert loaded.vocab_size == trained.vocab_size
        assert [loaded.encode(t) for t in ORDINARY] == [trained.encode(t) for t in ORDINARY]
    assert SentencePieceTokenizer.train(corpus, vocab_size=300, seed=1).model == trained.model


def test_sampled_training_and_user_errors(tmp_path, corpus):
    tok = SentencePieceTokenizer.train(corpus, vocab_size=300, max_sentences=500)
    assert tok.decode(tok.encode(corpus[0])) == corpus[0]
    with pytest.raises(UserError, match="not found"):
        SentencePieceTokenizer.load(tmp_path / "missing.model")
    with pytest.raises(UserError, match="model type 'word'"):
        SentencePieceTokenizer.train(corpus, vocab_size=300, model_type="word")
    with pytest.raises(UserError, match=r"^junk.model: not a SentencePiece model$"):
        SentencePieceTokenizer(b"junk", origin="junk.model")  # not SentencePiece's parser call
    with pytest.raises(UserError, match="special ids are"):
        SentencePieceTokenizer(tok.model, special=SpecialIds(pad=3, unk=0, bos=1, eos=2))


def failing_corpus(error: Exception):
    yield "a man in a blue shirt"
    raise error


@pytest.mark.parametrize(
    "sentences, expected",
    [
        # the corpus's own error, as it raised it (SentencePiece would wrap it in "INTERNAL: ... At:")
        (failing_corpus(UserError("corpus.txt:2: not UTF-8")), "corpus.txt:2: not UTF-8"),
        (
            failing_corpus(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")),
            "tokenizer training failed reading sentence 2: UnicodeDecodeError: 'utf-8' codec can't "
            "decode byte 0xff in position 0: invalid start byte",
        ),
        ([], "tokenizer training failed: no sentences to train on"),
    ],
    ids=["user_error", "decode_error", "empty"],
)
def test_corpus_errors_are_one_clean_line(sentences, expected):
    with pytest.raises(UserError) as error:
        SentencePieceTokenizer.train(sentences, vocab_size=60)
    assert str(error.value) == expected


def test_sentencepiece_messages_lose_status_location_and_traceback():
    assert (
        sentencepiece_message(
            RuntimeError(
                "INTERNAL: src/trainer_interface.cc(638) [(static_cast<int>(required_chars_.size() + "
                "meta_pieces_.size())) <= (trainer_spec_.vocab_size())] Vocabulary size is smaller than "
                "required_chars. 5 vs 8."
            )
        )
        == "Vocabulary size is smaller than required_chars. 5 vs 8."
    )
    assert (
        sentencepiece_message(RuntimeError("INTERNAL: OSError: disk\n\nAt:\n  x.py(5): f\n"))
        == "OSError: disk"
    )
    assert sentencepiece_message(RuntimeError("INTERNAL: src/a.cc(1) [!sentences_.empty()] ")) == ""
