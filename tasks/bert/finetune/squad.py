"""SQuAD v1.1 exact match and F1, as the official `evaluate-v1.1.py` computes them.

Answers are normalized (lower-cased; ASCII punctuation removed; the articles a, an, the removed;
whitespace runs made one space), F1 is over bags of normalized tokens, each question scores its
best over its ground truths, and a question with no prediction scores 0. Scores are percentages.
One departure: the official script prints a line per unanswered question; this logs one line
with their count and the first few ids.

    python -m tasks.bert.finetune.squad DATASET PREDICTIONS

prints `{"exact_match": ..., "f1": ...}` as the official script does (both files may be .gz).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from tasks.bert.finetune.readers import SquadExample, read_json
from zoo.cli import main_guard
from zoo.config import UserError

log = logging.getLogger(__name__)
PUNCTUATION = frozenset(string.punctuation)
ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """The official normalization, in its order: lower, punctuation, articles, whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, truth: str) -> float:
    """1.0 if the normalized answers are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(truth))


def token_f1(prediction: str, truth: str) -> float:
    """F1 of the bags of normalized tokens (0 when they share none, empty answers included)."""
    predicted, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def gold_answers(examples: Iterable[SquadExample]) -> dict[str, list[str]]:
    """Question id -> its ground-truth answer texts (duplicates kept, as the official script)."""
    return {e.id: [text for text, _ in e.answers] for e in examples}


def read_gold(path: str | Path) -> dict[str, list[str]]:
    """Question id -> answer texts of a SQuAD v1.1 file, read as the official script reads it: the
    texts alone, so that any file it scores scores here (training reads files strictly, checking
    answer starts and titles: readers.read_squad).

    Raises:
        UserError: the file lacks the data / paragraphs / qas / answers structure (named).
    """
    data = read_json(path)
    try:
        return {
            qa["id"]: [answer["text"] for answer in qa["answers"]]
            for article in data["data"]
            for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]
        }
    except (KeyError, TypeError) as err:
        raise UserError(f"{path}: not a SQuAD v1.1 file ({type(err).__name__}: {err})") from None


def evaluate(gold: Mapping[str, Sequence[str]], predictions: Mapping[str, str]) -> dict[str, float]:
    """Exact match and F1 in percent over the questions of `gold`; predictions of other ids are
    ignored, and a question without a prediction scores 0 (logged).

    Args:
        gold: question id -> ground-truth answer texts (see `gold_answers`).
        predictions: question id -> predicted answer text.
    """
    if not gold:
        raise ValueError("no questions to score")
    missing = [qid for qid in gold if qid not in predictions]
    if missing:
        log.warning(
            "%d of %d questions have no prediction and score 0 (first: %s)",
            len(missing),
            len(gold),
            ", ".join(missing[:5]),
        )
    em = f1 = 0.0
    for qid, truths in gold.items():
        if qid in predictions:
            em += max(exact_match(predictions[qid], t) for t in truths)
            f1 += max(token_f1(predictions[qid], t) for t in truths)
    return {"exact_match": 100.0 * em / len(gold), "f1": 100.0 * f1 / len(gold)}


def read_predictions(path: str | Path) -> dict[str, str]:
    """A predictions file: one JSON object, question id -> answer text (plain or .gz).

    Raises:
        UserError: the file is not such an object; the message names the file (and the id).
    """
    predictions = read_json(path)
    if not isinstance(predictions, dict):
        raise UserError(f"{path}: not a JSON object of question id -> answer text")
    for qid, text in predictions.items():
        if not isinstance(text, str):
            raise UserError(f"{path}: question {qid}: the prediction is not a string")
    return predictions


@main_guard
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tasks.bert.finetune.squad",
        description="SQuAD v1.1 exact match and F1, as the official evaluate-v1.1.py prints them.",
    )
    parser.add_argument("dataset", help="the SQuAD v1.1 JSON file with the ground truths (plain or .gz)")
    parser.add_argument("predictions", help="a JSON object of question id -> predicted text (plain or .gz)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    scores = evaluate(read_gold(args.dataset), read_predictions(args.predictions))
    print(json.dumps(scores))


if __name__ == "__main__":
    main()
