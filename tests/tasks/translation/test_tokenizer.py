import pytest
import torch

from tasks.translation.synthetic import generate
from tasks.translation.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer
from zoo.config import UserError

ORDINARY = [
    "Two young, White males are outside near many bushes.",
    "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
    "A man in a blue shirt is standing on a ladder (cleaning a window) at 3 p.m.",
    "Ein Mann in einem blauen Hemd steht auf einer Leiter und putzt ein Fenster.",
    "Das Mädchen läuft über die Straße; der Hund wartet vor dem Geschäft!",
    "Is it 25% cheaper? \"Yes\", she said - it's 4.50 euros.",
]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return [side for pair in generate(2000, seed=0) for side in pair] + ORDINARY * 20


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_round_trip_and_special_ids(tmp_path, corpus, model_type):
    tok = Tokenizer.train(iter(corpus), tmp_path / "spm.model", vocab_size=400, model_type=model_type)
    assert (tok.sp.pad_id(), tok.sp.unk_id(), tok.sp.bos_id(), tok.sp.eos_id()) == (PAD_ID, UNK_ID, BOS_ID, EOS_ID)
    assert 100 < tok.vocab_size <= 400
    for text in ORDINARY + corpus[:50]:
        ids = tok.encode(text)
        assert ids and min(ids) > EOS_ID and UNK_ID not in ids
        assert tok.decode(ids) == text
    assert tok.encode_batch(ORDINARY) == [tok.encode(t) for t in ORDINARY]


def test_decode_stops_at_eos_and_skips_padding(tmp_path, corpus):
    tok = Tokenizer.train(corpus, tmp_path / "spm.model", vocab_size=300)
    first, second = (tok.encode(t) for t in ORDINARY[:2])
    row = torch.tensor([BOS_ID, *first, EOS_ID, *second, PAD_ID, PAD_ID])
    assert tok.decode(row) == ORDINARY[0]
    assert tok.decode_batch([[BOS_ID, *second, EOS_ID], second + [PAD_ID]]) == [ORDINARY[1]] * 2


def test_saved_model_loads_back_identically(tmp_path, corpus):
    trained = Tokenizer.train(corpus, tmp_path / "run" / "spm.model", vocab_size=300, seed=1)
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["spm.model"]
    loaded = Tokenizer(tmp_path / "run" / "spm.model")
    assert loaded.vocab_size == trained.vocab_size
    assert [loaded.encode(t) for t in ORDINARY] == [trained.encode(t) for t in ORDINARY]
    again = Tokenizer.train(corpus, tmp_path / "again.model", vocab_size=300, seed=1)
    assert again.path.read_bytes() == trained.path.read_bytes()


def test_sampled_training_and_user_errors(tmp_path, corpus):
    tok = Tokenizer.train(corpus, tmp_path / "s.model", vocab_size=300, max_sentences=500)
    assert tok.decode(tok.encode(corpus[0])) == corpus[0]
    with pytest.raises(UserError, match="not found"):
        Tokenizer(tmp_path / "missing.model")
    with pytest.raises(UserError, match="model type 'word'"):
        Tokenizer.train(corpus, tmp_path / "w.model", vocab_size=300, model_type="word")
