"""model.pretrained_sha256: the pretrained directory's model.safetensors checked before use."""

from __future__ import annotations

import hashlib

import pytest
import torch

from tasks.parsing.bert import ReaderConfig, load_pretrained
from zoo.config import Invalid, UserError
from zoo.convert.hf_bert import LoadedBert, write_hf_directory
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import BertModelConfig, build_bert

BERT = BertModelConfig(num_layers=1, dim=16, num_heads=2, ffn_dim=32, max_len=16)


@pytest.fixture
def bert_dir(tmp_path):
    tokenizer = WordPieceTokenizer.train(["the cat sat on the mat"] * 4, vocab_size=40, min_frequency=1)
    torch.manual_seed(0)
    model = build_bert(BERT, tokenizer.vocab_size, tokenizer.pad_id)
    return write_hf_directory(LoadedBert(model.eval(), tokenizer, BERT, tmp_path), tmp_path / "bert")


def test_matching_weights_load_and_others_are_refused(bert_dir) -> None:
    digest = hashlib.sha256((bert_dir / "model.safetensors").read_bytes()).hexdigest()
    loaded = load_pretrained(ReaderConfig(pretrained=str(bert_dir), pretrained_sha256=digest.upper()))
    assert loaded.config.num_layers == 1
    assert load_pretrained(ReaderConfig(pretrained=str(bert_dir))).config.dim == 16  # unchecked
    wrong = hashlib.sha256(b"other weights").hexdigest()
    with pytest.raises(UserError, match=f"SHA-256 {digest}, expected {wrong}") as err:
        load_pretrained(ReaderConfig(pretrained=str(bert_dir), pretrained_sha256=wrong))
    assert "\n" not in str(err.value) and "model.safetensors" in str(err.value)
    (bert_dir / "model.safetensors").unlink()
    with pytest.raises(UserError, match="is not a file"):
        load_pretrained(ReaderConfig(pretrained=str(bert_dir), pretrained_sha256=digest))


def test_the_hash_is_checked_for_form() -> None:
    with pytest.raises(Invalid, match="64 hex digits"):
        ReaderConfig(pretrained="x", pretrained_sha256="53aa").check()
    with pytest.raises(Invalid, match="set that too"):
        ReaderConfig(pretrained_sha256="0" * 64).check()
