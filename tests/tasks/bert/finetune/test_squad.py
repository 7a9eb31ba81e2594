"""SQuAD v1.1 exact match and F1: the official normalization on hand cases, and the two official
prediction files' scores on the shared dev set (fixed test vectors)."""

from __future__ import annotations

import json
import logging

import pytest

from tasks.bert.finetune.squad import evaluate, exact_match, main, normalize_answer, token_f1


@pytest.mark.parametrize(
    "text, normalized",
    [
        ("The  Cat's hat!", "cats hat"),
        # articles are whole words only
        ("Theater of an era", "theater of era"),
        # punctuation goes before articles are looked for: "a-team" becomes one word
        ("A-team", "ateam"),
        # only ASCII punctuation is removed
        ("1990–1991 «Über»", "1990–1991 «über»"),
        ("  a an the  ", ""),
    ],
)
def test_normalize_answer(text, normalized):
    assert normalize_answer(text) == normalized


def test_exact_match_and_token_f1_by_hand():
    assert exact_match("The Broncos.", "broncos") == 1.0 and exact_match("Broncos", "Denver Broncos") == 0.0
    # both normalize to the empty string: equal, as in the official script
    assert exact_match("the", "a") == 1.0
    # 2 tokens shared: precision 2/2, recall 2/3
    assert token_f1("the cat sat", "cat sat down") == pytest.approx(0.8)
    # bags, not sets: x and y are shared once each, precision = recall = 2/3
    assert token_f1("x x y", "x y y") == pytest.approx(2 / 3)
    # no token shared (empty answers included) scores 0
    assert token_f1("the", "a") == 0.0 and token_f1("dog", "cat") == 0.0


GOLD = {"q1": ["Denver Broncos", "the Broncos"], "q2": ["1990"], "q3": ["cat"]}
PREDICTIONS = {"q1": "Broncos", "q2": "in 1990", "not-a-question": "x"}


def test_evaluate_takes_the_best_truth_and_scores_missing_as_zero(caplog):
    with caplog.at_level(logging.WARNING, logger="tasks.bert.finetune.squad"):
        scores = evaluate(GOLD, PREDICTIONS)
    # q1: exact against "the Broncos"; q2: F1 2/3 (precision 1/2, recall 1); q3: no prediction
    assert scores == pytest.approx({"exact_match": 100 / 3, "f1": 100 * (1 + 2 / 3) / 3})
    assert "1 of 3 questions have no prediction and score 0 (first: q3)" in caplog.text


def _dataset() -> dict:
    qas = [
        {
            "id": qid,
            "question": "?",
            "answers": [{"text": t, "answer_start": CONTEXT.index(t)} for t in truths],
        }
        for qid, truths in GOLD.items()
    ]
    return {"data": [{"title": "T", "paragraphs": [{"context": CONTEXT, "qas": qas}]}], "version": "1.1"}


CONTEXT = "In 1990 the Broncos, the Denver Broncos, met a cat."


def test_command_prints_the_official_json(tmp_path, capsys):
    (tmp_path / "dev.json").write_text(json.dumps(_dataset()))
    (tmp_path / "pred.json").write_text(json.dumps(PREDICTIONS))
    main([str(tmp_path / "dev.json"), str(tmp_path / "pred.json")])
    assert json.loads(capsys.readouterr().out) == evaluate(GOLD, PREDICTIONS)


def test_command_scores_any_file_the_official_script_scores(tmp_path, capsys):
    """The scorer reads answer texts alone: starts that miss and a repeated title (which training
    refuses) change nothing, as in evaluate-v1.1.py."""
    dataset = _dataset()
    for qa in dataset["data"][0]["paragraphs"][0]["qas"]:
        for answer in qa["answers"]:
            answer["answer_start"] += 1
    dataset["data"].append({"title": "T", "paragraphs": []})
    (tmp_path / "dev.json").write_text(json.dumps(dataset))
    (tmp_path / "pred.json").write_text(json.dumps(PREDICTIONS))
    main([str(tmp_path / "dev.json"), str(tmp_path / "pred.json")])
    assert json.loads(capsys.readouterr().out) == evaluate(GOLD, PREDICTIONS)
    (tmp_path / "bad.json").write_text(json.dumps({"data": [{"title": "T"}]}))
    with pytest.raises(SystemExit) as info:
        main([str(tmp_path / "bad.json"), str(tmp_path / "pred.json")])
    assert info.value.code == 2 and "bad.json: not a SQuAD v1.1 file" in capsys.readouterr().err


def test_command_refuses_bad_predictions_in_one_line(tmp_path, capsys):
    (tmp_path / "dev.json").write_text(json.dumps(_dataset()))
    (tmp_path / "pred.json").write_text(json.dumps({"q1": ["Broncos"]}))
    with pytest.raises(SystemExit) as info:
        main([str(tmp_path / "dev.json"), str(tmp_path / "pred.json")])
    assert info.value.code == 2
    assert (
        capsys.readouterr().err
        == f"error: {tmp_path / 'pred.json'}: question q1: the prediction is not a string\n"
    )


@pytest.mark.data
@pytest.mark.parametrize(
    "predictions, expected",
    [
        # 13 dev questions have no prediction in this file (they score 0); 28 of its ids are not dev ids
        ("pred-dev-v1.1-logistic-regression-baseline.json.gz", ("40.14", "50.98")),
        ("pred-dev-v1.1-bert-large-ensemble.json.gz", ("86.21", "92.20")),
    ],
)
def test_official_prediction_files(data_dir, capsys, predictions, expected):
    folder = data_dir / "squad-v1.1"
    main([str(folder / "dev-v1.1.json.gz"), str(folder / predictions)])
    scores = json.loads(capsys.readouterr().out)
    assert (f"{scores['exact_match']:.2f}", f"{scores['f1']:.2f}") == expected
