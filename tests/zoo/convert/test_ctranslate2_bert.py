"""zoo.convert.ctranslate2_bert: over the written directory, CTranslate2's Encoder gives zoo's BERT
encoder's hidden states and pooled states on a padded batch of rows of several lengths with both
token types (norms, biases and the LayerNorm epsilon random, so a misplaced one shows); an int8
directory stores int8 weights and stays close; a missing peer is refused in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from zoo.config import UserError
from zoo.convert.ctranslate2_bert import write_ctranslate2_bert
from zoo.convert.hf_bert import LoadedBert
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import Bert, BertModelConfig, build_bert

ctranslate2 = pytest.importorskip("ctranslate2", reason="needs ctranslate2 (pip install ctranslate2)")
pytest.importorskip("transformers", reason="CTranslate2's converter reads the directory with transformers")
VOCAB = 61
CONFIGS = {
    "2 layers 4 heads": BertModelConfig(num_layers=2, dim=32, num_heads=4, ffn_dim=64, max_len=24),
    "3 layers 1 head wide eps": BertModelConfig(
        num_layers=3, dim=48, num_heads=1, ffn_dim=40, max_len=24, type_vocab_size=3, norm_eps=0.3
    ),
}
# Rows of several lengths (one of the table's full length), and their token types: segment A then B.
ROWS = [[2, 7, 9, 11, 3, 40, 3], [2, 30, 3], list(range(10, 34))]
TYPES = [[0, 0, 0, 0, 0, 1, 1], [0, 0, 1], [0] * 12 + [1] * 12]


def loaded(cfg: BertModelConfig) -> LoadedBert:
    """A random BERT (every parameter moved off its initialisation) with a vocabulary smaller than
    its embeddings (the converter pads it)."""
    torch.manual_seed(0)
    model = build_bert(cfg, VOCAB, 0).eval()
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    tokenizer = WordPieceTokenizer.whole_words(["a cat sat on the mat"])
    return LoadedBert(model, tokenizer, cfg, Path("."))


def zoo_outputs(model: Bert) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states (B, T, D) and pooled states (B, D) of ROWS right-padded."""
    length = max(map(len, ROWS))
    ids, types = (
        torch.zeros(len(ROWS), length, dtype=torch.long),
        torch.zeros(len(ROWS), length, dtype=torch.long),
    )
    mask = torch.zeros(len(ROWS), length, dtype=torch.bool)
    for i, (row, row_types) in enumerate(zip(ROWS, TYPES)):
        ids[i, : len(row)], types[i, : len(row)], mask[i, : len(row)] = (
            torch.tensor(row),
            torch.tensor(row_types),
            True,
        )
    with torch.no_grad():
        hidden = model.encode(ids, types, mask)
        return hidden, model.pool(hidden)


def engine_outputs(path, compute_type: str = "default") -> tuple[torch.Tensor, torch.Tensor]:
    encoder = ctranslate2.Encoder(str(path), intra_threads=1, compute_type=compute_type)
    output = encoder.forward_batch(ROWS, token_type_ids=TYPES)
    return torch.from_numpy(np.array(output.last_hidden_state)), torch.from_numpy(
        np.array(output.pooler_output)
    )


@pytest.mark.parametrize("name", CONFIGS)
def test_the_engine_encodes_a_padded_batch_as_zoo(tmp_path, name):
    bert = loaded(CONFIGS[name])
    write_ctranslate2_bert(bert, tmp_path / "ct2")
    assert ctranslate2.Encoder(str(tmp_path / "ct2")).compute_type == "float32"
    hidden, pooled = engine_outputs(tmp_path / "ct2")
    expected_hidden, expected_pooled = zoo_outputs(bert.model)
    assert hidden.shape == expected_hidden.shape
    for i, row in enumerate(ROWS):
        torch.testing.assert_close(
            hidden[i, : len(row)], expected_hidden[i, : len(row)], atol=1e-5, rtol=1e-5
        )
    torch.testing.assert_close(pooled, expected_pooled, atol=1e-5, rtol=1e-5)


def test_an_int8_directory_stores_int8_and_stays_close(tmp_path):
    bert = loaded(CONFIGS["2 layers 4 heads"])
    write_ctranslate2_bert(bert, tmp_path / "ct2", quantization="int8")
    assert ctranslate2.Encoder(str(tmp_path / "ct2")).compute_type == "int8_float32"
    hidden, _ = engine_outputs(tmp_path / "ct2")
    expected, _ = zoo_outputs(bert.model)
    for i, row in enumerate(ROWS):
        cosine = torch.nn.functional.cosine_similarity(hidden[i, : len(row)], expected[i, : len(row)], dim=-1)
        assert cosine.min() > 0.99
        assert not torch.allclose(hidden[i, : len(row)], expected[i, : len(row)], atol=1e-5)


def test_without_transformers_the_writer_refuses_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # what `import transformers` then raises
    with pytest.raises(UserError, match="needs ctranslate2 and transformers") as error:
        write_ctranslate2_bert(loaded(CONFIGS["2 layers 4 heads"]), tmp_path / "ct2")
    assert "\n" not in str(error.value)
    assert not (tmp_path / "ct2").exists()
