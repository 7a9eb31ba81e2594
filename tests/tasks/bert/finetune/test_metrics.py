"""Fine-tuning metrics: scikit-learn's classification scores on a hand-counted case, and chunk
counts on B-I-O sequences whose expected counts follow conlleval.pl's startOfChunk/endOfChunk."""

from __future__ import annotations

import pytest

from tasks.bert.finetune.metrics import ChunkCounts, accuracy, binary_f1, chunk_scores, mcc

# TP=2 ("1","1"), FN=1, FP=1, TN=1.
GOLD = ["1", "1", "1", "0", "0"]
PREDICTED = ["1", "1", "0", "1", "0"]


def test_classification_scores_by_hand():
    assert accuracy(GOLD, PREDICTED) == pytest.approx(3 / 5)
    # F1 = 2TP / (2TP + FP + FN) = 4 / 6
    assert binary_f1(GOLD, PREDICTED, positive="1") == pytest.approx(4 / 6)
    # the negative label's view: TP=1, FP=1, FN=1
    assert binary_f1(GOLD, PREDICTED, positive="0") == pytest.approx(2 / 4)
    # (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (2 - 1) / sqrt(3 * 3 * 2 * 2)
    assert mcc(GOLD, PREDICTED) == pytest.approx(1 / 6)


def test_classification_scores_at_the_extremes():
    assert accuracy(GOLD, GOLD) == 1.0 and mcc(GOLD, GOLD) == pytest.approx(1.0)
    inverted = ["0" if label == "1" else "1" for label in GOLD]
    assert mcc(GOLD, inverted) == pytest.approx(-1.0)
    # no positive predicted and none gold: F1 undefined, reported 0 (no warning raised)
    assert binary_f1(["0", "0"], ["0", "0"], positive="1") == 0.0


# name: (gold sentences, predicted sentences, overall (gold, predicted, correct), per type)
CASES = {
    # I-X after O or at a sentence start opens a chunk: the predicted chunks equal the gold ones.
    "i_starts": (
        [["B-NP", "I-NP", "O", "B-VP"]],
        [["I-NP", "I-NP", "O", "I-VP"]],
        (2, 2, 2),
        {"NP": (1, 1, 1), "VP": (1, 1, 1)},
    ),
    # A type switch ends the chunk: predicted NP[0,1] and VP[2,2] against gold NP[0,2].
    "type_switch": (
        [["B-NP", "I-NP", "I-NP"]],
        [["B-NP", "I-NP", "I-VP"]],
        (1, 2, 0),
        {"NP": (1, 1, 0), "VP": (0, 1, 0)},
    ),
    # I-VP after B-NP starts a VP chunk, the same as gold's B-VP there.
    "i_after_another_type": (
        [["B-NP", "B-VP", "I-VP"]],
        [["B-NP", "I-VP", "I-VP"]],
        (2, 2, 2),
        {"NP": (1, 1, 1), "VP": (1, 1, 1)},
    ),
    # B-NP after I-NP splits gold into NP[0,1] NP[2,2]; the prediction is one NP[0,2].
    "b_splits": (
        [["B-NP", "I-NP", "B-NP"]],
        [["B-NP", "I-NP", "I-NP"]],
        (2, 1, 0),
        {"NP": (2, 1, 0)},
    ),
    # A sentence end closes a chunk: gold's I-NP opening sentence 2 is a chunk of its own, as
    # the prediction's B-NP (joined into one sentence they would differ).
    "sentence_end": (
        [["O", "B-NP", "I-NP"], ["I-NP", "O"]],
        [["O", "B-NP", "I-NP"], ["B-NP", "O"]],
        (2, 2, 2),
        {"NP": (2, 2, 2)},
    ),
    # A one-token chunk on the last token; a prediction starting one token early is wrong.
    "last_token": (
        [["O", "O", "B-PP"]],
        [["O", "B-PP", "I-PP"]],
        (1, 1, 0),
        {"PP": (1, 1, 0)},
    ),
    "all_outside": ([["O", "O"]], [["O", "O"]], (0, 0, 0), {}),
    # The type is everything after the first hyphen.
    "hyphenated_type": (
        [["B-X-Y", "I-X-Y", "O"]],
        [["I-X-Y", "I-X-Y", "O"]],
        (1, 1, 1),
        {"X-Y": (1, 1, 1)},
    ),
}


def _counts(counts: ChunkCounts) -> tuple[int, int, int]:
    return counts.gold, counts.predicted, counts.correct


@pytest.mark.parametrize("name", CASES)
def test_chunk_counts_follow_conlleval(name):
    gold, predicted, overall, by_type = CASES[name]
    scores = chunk_scores(gold, predicted)
    assert _counts(scores.overall) == overall
    assert {t: _counts(c) for t, c in scores.by_type.items()} == by_type


def test_chunk_scores_of_all_cases_together():
    gold = [s for case in CASES.values() for s in case[0]]
    predicted = [s for case in CASES.values() for s in case[1]]
    scores = chunk_scores(gold, predicted)
    assert _counts(scores.overall) == (11, 11, 7)
    assert list(scores.by_type) == ["NP", "PP", "VP", "X-Y"]
    # conlleval prints on these: precision 63.64%, recall 63.64%, FB1 63.64; NP: 66.67%, 57.14%, 61.54
    assert scores.overall.precision == pytest.approx(7 / 11) and scores.overall.f1 == pytest.approx(7 / 11)
    np_ = scores.by_type["NP"]
    assert (np_.precision, np_.recall) == pytest.approx((4 / 6, 4 / 7))
    assert np_.f1 == pytest.approx(0.6154, abs=5e-5)
    assert scores.by_type["PP"].f1 == 0.0


def test_tuples_score_as_lists():
    gold, predicted, overall, _ = CASES["sentence_end"]
    assert _counts(chunk_scores([tuple(s) for s in gold], [tuple(s) for s in predicted]).overall) == overall


def test_chunk_scores_refuse_misaligned_input():
    with pytest.raises(ValueError, match="2 gold sentences but 1"):
        chunk_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1"):
        chunk_scores([["O", "O"]], [["O"]])
