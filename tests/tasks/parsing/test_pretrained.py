"""Parsers reading a pretrained BERT: word pieces, the reader, batching, the checkpoint (both parsers)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from tasks.parsing.chart.batches import chart_input
from tasks.parsing.pieces import BertSpec, WordPieces, unescape
from tasks.parsing.seq2seq.batches import piece_source
from tasks.parsing.seq2seq.model import rename_old_keys
from tasks.parsing.spec import ParsingOptions, load_runs
from tasks.parsing.task import ParsingTask, bert_of, parse
from tests.tasks.parsing.conftest import tiny_config
from zoo.convert.hf_bert import LoadedBert, read_hf_directory, write_hf_directory
from zoo.data.seq2seq import Ids, pad
from zoo.data.special import SPECIAL_IDS
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import BertModelConfig, build_bert
from zoo.train import evaluation, fit
from zoo.train.optim import build_optimizer

BERT = BertModelConfig(
    num_layers=1, dim=32, num_heads=2, ffn_dim=64, max_len=64, dropout=0.0, attn_dropout=0.0
)


@pytest.fixture
def bert_dir(handful, tmp_path):
    """A random tiny BERT saved as a Hugging Face directory, its vocabulary from the handful:
    every word and character (`whole_words`), since WordPiece training breaks ties between equally
    frequent merges differently in each process, and the learning test below needs the same
    vocabulary, hence the same run, every time."""
    text = [" ".join(t.leaves()) for t in handful["train"]] + ["( ) / 1/2 \" '"]
    tokenizer = WordPieceTokenizer.whole_words(text)
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
            assert ids[b, first[b, i] : first[b, i] + len(expected)].tolist() == expected
        assert pieces.length(words) == int(first[b, n + 1]) + 1
    assert ids[1, pieces.length(["cats"]) :].eq(tokenizer.pad_id).all()
    assert [unescape(w) for w in sentences[0]] == ["(", "dogs", "barked", "1/2", ")", '"']


def parser_with_bert(kind, handful, bert_dir, tmp_path):
    """A fresh tiny parser reading the BERT, its task, and a short and the longest test sentence;
    the reader's weights checked equal to the BERT's."""
    cfg = tiny_config(kind, str(tmp_path / "run"), 1)
    cfg.model.pretrained = str(bert_dir)
    task = ParsingTask(cfg, handful)
    task.setup(run=None)
    model = task.build_model()
    for name, value in task.bert.model.encoder.state_dict().items():
        assert torch.equal(bert_of(model).encoder.state_dict()[name], value), name
    return model, task, handful["test"][0].leaves(), max((t.leaves() for t in handful["test"]), key=len)


@pytest.mark.parametrize("kind", ["chart", "seq2seq"])
def test_pretrained_lr_scale_slows_the_bert_alone(kind, handful, bert_dir, tmp_path) -> None:
    cfg = tiny_config(kind, str(tmp_path / "run"), 1)
    cfg.model.pretrained, cfg.model.pretrained_lr_scale = str(bert_dir), 0.1
    task = ParsingTask(cfg, handful)
    task.setup(run=None)
    model = task.build_model()
    optimizer = build_optimizer(model, cfg.optim)
    lr = {id(p): group["lr"] for group in optimizer.param_groups for p in group["params"]}
    for name, param in model.named_parameters():
        slow = name.removeprefix("src_embed.").startswith(("bert.embeddings.", "bert.encoder."))
        assert lr[id(param)] == pytest.approx(cfg.optim.lr * (0.1 if slow else 1.0)), name
    assert any(".encoder." in name and "bert" in name for name, _ in model.named_parameters())


def test_the_parser_starts_from_the_bert_and_a_sentence_scores_the_same_alone_or_batched(
    handful, bert_dir, tmp_path
) -> None:
    model, task, short, long = parser_with_bert("chart", handful, bert_dir, tmp_path)
    with evaluation(model) as m:
        alone = m(*chart_input([short], task.vocab).model_inputs())[0]
        batched = m(*chart_input([long, short], task.vocab).model_inputs())[0]
        n = len(short) + 1
        torch.testing.assert_close(batched[1, :n, :n], alone[0], rtol=1e-5, atol=1e-5)
        # The BERT matters: other piece ids give other scores.
        x = chart_input([short], task.vocab)
        x.pieces[0, 1] = task.vocab.pieces.tokenizer.unk_id
        assert not torch.allclose(m(*x.model_inputs())[0], alone)


def test_the_seq2seq_encoder_reads_the_bert_and_a_sentence_encodes_the_same_alone_or_batched(
    handful, bert_dir, tmp_path
) -> None:
    model, task, short, long = parser_with_bert("seq2seq", handful, bert_dir, tmp_path)

    def source_ids(sentences):
        rows = [task.vocab.word_ids(s) for s in sentences]
        return pad(Ids.from_rows(rows), np.arange(len(rows)), SPECIAL_IDS.pad, last=SPECIAL_IDS.eos)

    def encode(sentences):
        return model.encode(source_ids(sentences), piece_source(sentences, task.vocab))[0]

    with evaluation(model):
        alone = encode([short])
        torch.testing.assert_close(encode([long, short])[1, : len(short) + 1], alone[0], rtol=1e-5, atol=1e-5)
        source = piece_source([short], task.vocab)
        unk = task.vocab.pieces.tokenizer.unk_id
        source.pieces[0, source.first[0, 0]] = unk  # the first word's first piece
        src = source_ids([short])
        assert not torch.allclose(model.encode(src, source)[0], alone)
        with pytest.raises(ValueError, match="pieces"):
            model.encode(src)


@pytest.mark.parametrize("kind", ["chart", "seq2seq"])
def test_a_parser_with_a_bert_learns_and_parses_from_its_checkpoint_alone(
    kind, handful, bert_dir, tmp_path
) -> None:
    cfg = tiny_config(kind, str(tmp_path / "run"), 60 if kind == "chart" else 80)
    cfg.model.pretrained = str(bert_dir)
    cfg.model.word_pointer = kind == "seq2seq"
    result = fit(cfg, ParsingTask(cfg, handful))
    assert result.metrics["f1"] == 100.0
    shutil.rmtree(bert_dir)  # the checkpoint holds the BERT's shape, tokenizer and weights
    parser = load_runs(ParsingOptions(run=str(result.run_dir), checkpoint="last"))
    sentences = [t.leaves() for t in handful["test"]]
    with evaluation(parser.model) as model:
        # The seq2seq parser writes XX for every tag: it takes the gold ones, as EVALB scoring does.
        tags = [[tag for _, tag in t.pos()] for t in handful["test"]] if kind == "seq2seq" else None
        assert parse(model, parser.vocab, sentences, parser.cfg, tags=tags) == handful["test"]


def test_the_chart_parser_reads_a_bare_encoder_checkpoint(handful, bert_dir, tmp_path) -> None:
    """A BertModel directory without pooler and heads (what sentence-transformers ship) is
    enough: the parser reads the last layer only."""
    from safetensors.torch import load_file, save_file

    weights = bert_dir / "model.safetensors"
    state = load_file(str(weights))
    save_file({k: v for k, v in state.items() if not k.startswith(("cls.", "bert.pooler."))}, str(weights))
    assert len(load_file(str(weights))) < len(state)
    model, task, short, _ = parser_with_bert("chart", handful, bert_dir, tmp_path)  # encoder weights equal
    with evaluation(model) as m:
        assert parse(m, task.vocab, [short], task.cfg)[0].leaves() == short


def test_seq2seq_weights_saved_under_the_old_names_load(handful, bert_dir, tmp_path) -> None:
    """Before the BERT became a source embedding, the seq2seq parser held `bert.*` beside
    `src_embed.*`: such weights are renamed at load and fill the model exactly."""
    model, *_ = parser_with_bert("seq2seq", handful, bert_dir, tmp_path)
    state = model.state_dict()
    old = {
        key.replace("src_embed.bert.", "bert.").replace("src_embed.words.", "src_embed."): value
        for key, value in state.items()
    }
    assert any(key.startswith("bert.") for key in old)
    renamed = rename_old_keys(old)
    assert renamed.keys() == state.keys()
    assert all(torch.equal(renamed[key], state[key]) for key in state)
