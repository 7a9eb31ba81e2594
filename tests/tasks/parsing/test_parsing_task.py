"""The parsers through the runner: losses, constrained decoding, learning, long sentences."""

from __future__ import annotations

import pytest
import torch
from nltk import Tree

from tasks.parsing.chart.batches import chart_input
from tasks.parsing.chart.task import hinge_loss
from tasks.parsing.data import Vocab
from tasks.parsing.parsers import build_model
from tasks.parsing.spec import ParsingOptions, load_runs
from tasks.parsing.task import ParsingTask, parse, score_trees
from tests.tasks.parsing.conftest import tiny_config
from zoo.decode.cky import cky
from zoo.train import evaluation, fit


def test_hinge_is_zero_only_when_gold_beats_every_tree_by_its_cost() -> None:
    gold = [[(0, 3, 1), (0, 2, 2)]]
    scores = torch.zeros(1, 4, 4, 3)
    assert hinge_loss(scores, gold, torch.tensor([3])).item() == pytest.approx(5.0)  # 5 spans, all wrong
    scores[..., 1:] = -1.5  # every wrong label loses by more than its cost of 1 ...
    scores[0, 0, 3, 1] = scores[0, 0, 2, 2] = 1.5  # ... and the gold labels win
    assert hinge_loss(scores, gold, torch.tensor([3])).item() == 0.0
    best = cky(scores, [3]).spans[0]
    assert {(i, j, label) for i, j, label in best if label} == {(0, 3, 1), (0, 2, 2)}


@pytest.mark.parametrize("beam_size", [1, 21])
def test_constrained_search_of_an_untrained_model_gives_well_formed_trees(
    handful, tmp_path, beam_size
) -> None:
    cfg = tiny_config("seq2seq", str(tmp_path), 1)
    vocab = Vocab.build(handful["train"])
    torch.manual_seed(0)
    model = build_model(cfg, vocab)
    sentences = [t.leaves() for t in handful["test"]] + [["unknown", "words", "here"], ["one"]]
    with evaluation(model) as m:
        trees = parse(m, vocab, sentences, cfg, beam_size=beam_size)
    for tree, words in zip(trees, sentences):
        assert tree.leaves() == words
        assert tree.label() != "TOP"  # one root phrase, never the fallback
        symbols = [s for s in tree.pformat(margin=10**9).replace("(", " (").replace(")", " ) ").split()]
        assert symbols.count("(XX") == len(words)


@pytest.mark.parametrize(
    "kind, steps, partitioned", [("chart", 60, False), ("chart", 60, True), ("seq2seq", 250, False)]
)
def test_tiny_model_learns_a_handful_of_trees_by_heart(handful, tmp_path, kind, steps, partitioned) -> None:
    cfg = tiny_config(kind, str(tmp_path / kind), steps)
    cfg.model.partitioned = partitioned
    task = ParsingTask(cfg, handful)
    result = fit(cfg, task)
    assert result.metrics["f1"] == 100.0 and result.metrics["exact"] == 100.0
    with evaluation(result.model) as model:
        scored, predicted = score_trees(model, task.vocab, handful["test"], cfg)
    assert scored.all.f1 == 100.0
    if kind == "chart":
        assert predicted == handful["test"]  # tags too


def test_a_factored_parser_reloads_as_it_was_trained(handful, tmp_path) -> None:
    cfg = tiny_config("chart", str(tmp_path), 20)
    cfg.model.partitioned = True
    result = fit(cfg, ParsingTask(cfg, handful))
    loaded = load_runs(ParsingOptions(run=str(tmp_path), checkpoint="last"))
    assert any("parametrizations" in key for key in loaded.model.state_dict())
    inputs = chart_input([t.leaves() for t in handful["test"]], loaded.vocab).model_inputs()
    with evaluation(result.model) as trained, evaluation(loaded.model) as reloaded:
        torch.testing.assert_close(reloaded(*inputs), trained(*inputs), rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["chart", "seq2seq"])
def test_too_long_sentence_is_reported_and_left_flat(handful, tmp_path, capsys, kind) -> None:
    cfg = tiny_config(kind, str(tmp_path), 1)
    cfg.model.max_len = 12
    vocab = Vocab.build(handful["train"])
    model = build_model(cfg, vocab)
    long = ["the"] * 11
    with evaluation(model) as m:
        trees = parse(m, vocab, [["the", "dog"], long], cfg, beam_size=2)
    assert trees[1] == Tree("TOP", [Tree("XX", [w]) for w in long])
    assert trees[0].leaves() == ["the", "dog"] and trees[0].label() != "TOP"
    assert "sentence 2: 11 words, more than model.max_len=12" in capsys.readouterr().err
    # Scored against gold, the unparsed sentence keeps its gold tags: all missed, not an error.
    gold = Tree.fromstring(
        "(S (NP (DT the) (NN dog) (CC and) (DT the) (JJ old) (NN cat)) (, ,) (VP (VBD barked)"
        " (ADVP (RB very) (RB loudly) (RB again))) (. .))"
    )  # 12 words
    with evaluation(model) as m:
        scored, predicted = score_trees(m, vocab, [gold], cfg)
    assert predicted[0].label() == "TOP" and predicted[0].pos() == gold.pos()
    assert (scored.all.errors, scored.all.test, scored.all.recall) == (0, 0, 0.0)
