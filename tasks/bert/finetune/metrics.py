"""Fine-tuning metrics as the field computes them; scores are fractions in [0, 1].

- Sentence classification: accuracy, F1 of the positive label, Matthews correlation (GLUE's
  CoLA metric), all from scikit-learn.
- Chunking and B-I-O tagging: chunk precision, recall and F1, overall and per type, as the
  CoNLL-2000 `conlleval` script counts them. A chunk is a maximal run `B-X I-X*`; an `I-X` after
  `O`, after a chunk of another type, or at the start of a sentence starts a new chunk; sentence
  ends close every chunk; a chunk counts as correct only if its type and both ends match. The
  chunks come from `seqeval.metrics.sequence_labeling.get_entities` (seqeval's default mode is
  a port of conlleval's `startOfChunk`/`endOfChunk`), one sentence at a time, counted here so
  the counts are returned too. seqeval was kept after it agreed with conlleval.pl (2004-01-26)
  on the counts, overall and per type, of 300 random B-I-O sequence pairs with hyphenated types
  and I- starts; tests/tasks/bert/finetune/test_conlleval.py holds that comparison, against a
  port of conlleval.pl's chunk rules, beside the hand-derived counts of test_metrics.py.

SQuAD's exact match and F1 are in `squad.py` (percentages, as the official script prints them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from seqeval.metrics.sequence_labeling import get_entities
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

Label = str | int


def accuracy(gold: Sequence[Label], predicted: Sequence[Label]) -> float:
    """The fraction of predictions equal to the gold label."""
    return float(accuracy_score(gold, predicted))


def binary_f1(gold: Sequence[Label], predicted: Sequence[Label], *, positive: Label) -> float:
    """F1 of the `positive` label (GLUE's MRPC and QQP F1); 0 where it is undefined.

    Args:
        gold: the gold labels, two distinct values at most.
        predicted: the predicted labels.
        positive: the label whose precision and recall make the F1 (GLUE: "1").
    """
    return float(f1_score(gold, predicted, pos_label=positive, average="binary", zero_division=0))


def mcc(gold: Sequence[Label], predicted: Sequence[Label]) -> float:
    """Matthews correlation coefficient, in [-1, 1] (0 where it is undefined, as scikit-learn)."""
    return float(matthews_corrcoef(gold, predicted))


@dataclass(frozen=True)
class ChunkCounts:
    """Chunk counts of one type (or all): in the gold tags, in the predictions, and correct."""

    gold: int
    predicted: int
    correct: int

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        # conlleval's formula, from precision and recall, and 0 where both are 0.
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True)
class ChunkScores:
    """conlleval's report: overall counts and counts per chunk type (types sorted)."""

    overall: ChunkCounts
    by_type: dict[str, ChunkCounts]


def chunk_scores(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> ChunkScores:
    """Chunk precision, recall and F1 of predicted B-I-O tags against gold ones, as conlleval.

    Args:
        gold: the gold tags, one sequence per sentence.
        predicted: the predicted tags, as many per sentence as `gold`.

    Raises:
        ValueError: the sentences or their lengths differ in number.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted")
    gold_chunks, predicted_chunks = _chunks(gold), _chunks(predicted)
    correct = gold_chunks & predicted_chunks
    counts = [
        Counter(kind for _, kind, _, _ in chunks) for chunks in (gold_chunks, predicted_chunks, correct)
    ]
    types = sorted(counts[0].keys() | counts[1].keys())
    return ChunkScores(
        overall=ChunkCounts(len(gold_chunks), len(predicted_chunks), len(correct)),
        by_type={t: ChunkCounts(*(c[t] for c in counts)) for t in types},
    )


def sentence_chunks(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """One sentence's chunks as conlleval reads its tags: (type, first word, last word), in order."""
    return get_entities(list(tags))


def _chunks(sentences: Sequence[Sequence[str]]) -> set[tuple[int, str, int, int]]:
    # (sentence, type, first, last): sentence by sentence, so no chunk runs across a sentence end.
    return {(i, *chunk) for i, tags in enumerate(sentences) for chunk in sentence_chunks(tags)}
