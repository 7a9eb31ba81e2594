"""The chart parser reading a pretrained BERT: word pieces, the reader, batching, the checkpoint."""

from __future__ import annotations

import shutil

import pytest
import torch

from zoo.models.bert_hf import LoadedBert, read_hf_directory, write_hf_directory
from zoo.data.wordpiece import WordPieceTokenizer
from tasks.parsing.data import chart_input
from tasks.parsing.inference import TrainedParserOptions, load_parser
from tasks.parsing.pieces import BertSpec, WordPieces, unescape
from tasks.parsing.task import ParsingTask, parse
from tests.tasks.parsing.conftest import tiny_config
from zoo.models.bert import BertModelConfig, build_bert
from zoo.train import evaluation, fit

BERT = BertModelConfig(num_layers=1, dim=32, num_heads=2, ffn_dim=64, max_len=64, dropout=0.0, attn_dropout=0.0)


@pytest.fixture
def bert_dir(handful, tmp_path):
    """A random tiny BERT saved as a Hugging Face directory, its vocabulary from the handful."""
    text = [" ".join(t.leaves()) for t in handful["train"]] + ["( ) / 1/2 \" '"]
    tokenizer = WordPieceTokenizer.train(text, vocab_size=120, min_frequency=1)
    torch.manual_seed(1)
    model = build_bert(BERT, tokenizer.vocab_size, tokenizer.pad_id)
    return write_hf_directory(LoadedBert(model.eval(), tokenizer, BERT, tmp_path), tmp_path / "bert")


def test_every_word_reads_its_first_piece_and_the_markers_read_cls_and_sep(bert_dir) -> None:
    loaded = read_hf_directory(bert_dir)
    tokenizer, pieces = loaded.tokenizer, WordPieces(BertSpec.of(loaded))
    sentences = [["-LRB-", "dogs", "barked", "1\\/2", "-RRB-", "``"], ["cats"]]
    ids, first = pieces.batch(sentences)
    for b, words in enumerate(sentences):
        n = len(words)
        assert ids[b, first[b, 0]] == tokenizer.cls_id and ids[b, first[b, n + 1]] == tokenizer.sep_id
        for i, word in enumerate(words, start=1):
            expected = tokenizer.encode(unescape(word))
            assert ids[b, first[b, i]:first[b, i] + len(expected)].tolist() == expected
        assert pieces.length(words) == int(first[b, n + 1]) + 1
    assert ids[1, pieces.length(["cats"]):].eq(tokenizer.pad_id).all()
    assert [unescape(w) for w in sentences[0]] == ["(", "dogs", "barked", "1/2", ")", '"']


def test_the_parser_starts_from_the_bert_and_a_sentence_scores_the_same_alone_or_batched(handful, bert_dir, tmp_path) -> None:
    cfg = tiny_config("chart", str(tmp_path / "run"), 1)
    cfg.model.pretrained = str(bert_dir)
    task = ParsingTask(cfg, handful)
    task.setup(run=None)
    model = task.build_model()
    for name, value in task.bert.model.encoder.state_dict().items():
        assert torch.equal(model.bert.encoder.state_dict()[name], value), name
    short, long = handful["test"][0].leaves(), max((t.leaves() for t in handful["test"]), key=len)
    with evaluation(model) as m:
        alone = m(*chart_input([short], task.vocab).model_inputs())[0]
        batched = m(*chart_input([long, short], task.vocab).model_inputs())[0]
        n = len(short) + 1
        torch.testing.assert_close(batched[1, :n, :n], alone[0], rtol=1e-5, atol=1e-5)
        # The BERT matters: other piece ids give other scores.
        x = chart_input([short], task.vocab)
        x.pieces[0, 1] = task.vocab.pieces.tokenizer.unk_id
        assert not torch.allclose(m(*x.model_inputs())[0], alone)


def test_a_parser_with_a_bert_learns_and_parses_from_its_checkpoint_alone(handful, bert_dir, tmp_path) -> None:
    cfg = tiny_config("chart", str(tmp_path / "run"), 60)
    cfg.model.pretrained = str(bert_dir)
    result = fit(cfg, ParsingTask(cfg, handful))
    assert result.metrics["f1"] == 100.0
    shutil.rmtree(bert_dir)  # the checkpoint holds the BERT's shape, tokenizer and weights
    parser = load_parser(TrainedParserOptions(run=str(result.run_dir), checkpoint="last"))
    sentences = [t.leaves() for t in handful["test"]]
    with evaluation(parser.model) as model:
        assert parse(model, parser.vocab, sentences, parser.cfg) == handful["test"]
