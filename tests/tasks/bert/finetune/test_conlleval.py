"""The chunk metric against conlleval.pl itself: its chunk rules ported here, clause for clause,
as an independent reference (it shares no code with seqeval or tasks.bert.finetune.metrics), and
compared with `chunk_scores` on seeded random B-I-O sequence pairs and on hand cases.

The port follows conlleval.pl (version 2004-01-26): `startOfChunk`, `endOfChunk`, and the main
loop's counting of found and correct chunks, with a sentence end read as its `-X-` boundary line
(tags O O, the guess forced to O). A tag splits at its first hyphen (`/^([^-]*)-(.*)$/`), so
`B-X-Y` is a chunk of type `X-Y`. The `E`, `[`, `]` and `.` clauses are kept so the port can be
read against the Perl line by line; B-I-O tags never reach them.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tasks.bert.finetune.metrics import chunk_scores
from tests.tasks.bert.finetune.test_metrics import CASES

BOUNDARY = "-X-"  # conlleval's sentence boundary: an empty line reads as "-X- O O"
ENDS = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
STARTS = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}


def end_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    return (
        (prev_tag, tag) in ENDS
        or (prev_tag not in ("O", ".") and prev_type != type_)
        or prev_tag in ("[", "]")  # "chunks assumed to have length 1" (conlleval, 1998-12-22)
    )


def start_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    return (prev_tag, tag) in STARTS or (tag not in ("O", ".") and prev_type != type_) or tag in ("[", "]")


def split_tag(tag: str) -> tuple[str, str]:
    """conlleval's /^([^-]*)-(.*)$/: the chunk tag before the first hyphen, the type after it."""
    kind, hyphen, type_ = tag.partition("-")
    return (kind, type_) if hyphen else (tag, "")


Counts = dict[str, tuple[int, int, int]]  # type ("" overall) -> chunks in gold, guessed, correct
Scores = dict[tuple[str, str], float]  # (type, "precision" | "recall" | "f1") -> a fraction


def conlleval(gold: list[list[str]], guessed: list[list[str]]) -> Counts:
    """conlleval.pl's main loop over the file its input would be (a `word gold guess` line per
    token, an empty line after each sentence), and its counts overall and per type."""
    lines = []
    for gold_tags, guessed_tags in zip(gold, guessed, strict=True):
        lines += [("w", g, p) for g, p in zip(gold_tags, guessed_tags, strict=True)]
        lines.append((BOUNDARY, "O", "O"))
    found_correct, found_guessed, correct_chunk = Counter(), Counter(), Counter()
    in_correct = False
    last_correct, last_correct_type, last_guessed, last_guessed_type = "O", "", "O", ""
    for first, correct_tag, guessed_tag in lines:
        correct, correct_type = split_tag(correct_tag)
        guess, guessed_type = split_tag(guessed_tag)
        if first == BOUNDARY:  # "sentence breaks should always be counted as out of chunk"
            guess = "O"
        correct_ends = end_of_chunk(last_correct, correct, last_correct_type, correct_type)
        guess_ends = end_of_chunk(last_guessed, guess, last_guessed_type, guessed_type)
        correct_starts = start_of_chunk(last_correct, correct, last_correct_type, correct_type)
        guess_starts = start_of_chunk(last_guessed, guess, last_guessed_type, guessed_type)
        if in_correct:
            if correct_ends and guess_ends and last_guessed_type == last_correct_type:
                in_correct = False
                correct_chunk[last_correct_type] += 1
            elif correct_ends != guess_ends or guessed_type != correct_type:
                in_correct = False
        if correct_starts and guess_starts and guessed_type == correct_type:
            in_correct = True
        if correct_starts:
            found_correct[correct_type] += 1
        if guess_starts:
            found_guessed[guessed_type] += 1
        last_correct, last_correct_type, last_guessed, last_guessed_type = (
            correct, correct_type, guess, guessed_type
        )  # fmt: skip
    if in_correct:
        correct_chunk[last_correct_type] += 1
    types = sorted(found_correct.keys() | found_guessed.keys())
    overall = (found_correct.total(), found_guessed.total(), correct_chunk.total())
    return {"": overall, **{t: (found_correct[t], found_guessed[t], correct_chunk[t]) for t in types}}


def conlleval_scores(counts: Counts) -> Scores:
    """Precision, recall and FB1 from the counts as conlleval.pl computes them (0 where a
    denominator is 0)."""
    scores = {}
    for type_, (gold, guessed, correct) in counts.items():
        precision = correct / guessed if guessed else 0.0
        recall = correct / gold if gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores |= {(type_, "precision"): precision, (type_, "recall"): recall, (type_, "f1"): f1}
    return scores


def project_counts(gold: list[list[str]], guessed: list[list[str]]) -> Counts:
    found = chunk_scores(gold, guessed)
    return {t: (c.gold, c.predicted, c.correct) for t, c in {"": found.overall, **found.by_type}.items()}


def project_scores(gold: list[list[str]], guessed: list[list[str]]) -> Scores:
    """The project's own precision, recall and F1 (not recomputed here from its counts)."""
    found = chunk_scores(gold, guessed)
    return {(t, name): getattr(c, name) for t, c in {"": found.overall, **found.by_type}.items()
            for name in ("precision", "recall", "f1")}  # fmt: skip


# Types with hyphens, one of them spelled like a tag, so that a tag splits at its first hyphen only.
TYPES = ("NP", "VP", "X-Y", "I-Z")


def random_tag(rng: random.Random) -> str:
    kind = rng.choices(("O", "B", "I"), weights=(4, 3, 3))[0]
    return kind if kind == "O" else f"{kind}-{rng.choice(TYPES)}"


def random_pair(seed: int) -> tuple[list[list[str]], list[list[str]]]:
    """1-4 sentences of 1-10 random tags (I- starts, type switches and all), and a guess that
    keeps each gold tag with probability 0.7 (so that many chunks are right, some nearly)."""
    rng = random.Random(seed)
    gold = [[random_tag(rng) for _ in range(rng.randint(1, 10))] for _ in range(rng.randint(1, 4))]
    guessed = [[tag if rng.random() < 0.7 else random_tag(rng) for tag in tags] for tags in gold]
    return gold, guessed


SEEDS = range(300)


def test_the_port_counts_the_hand_derived_cases():
    """The reference itself, on test_metrics' cases, whose counts were derived by hand from
    conlleval.pl's rules (and, together, as conlleval prints them: 63.64 overall)."""
    for name, (gold, guessed, overall, by_type) in CASES.items():
        assert conlleval(gold, guessed) == {"": overall, **by_type}, name
    gold = [s for case in CASES.values() for s in case[0]]
    guessed = [s for case in CASES.values() for s in case[1]]
    overall = {
        key: value for key, value in conlleval_scores(conlleval(gold, guessed)).items() if key[0] == ""
    }
    assert list(overall.values()) == pytest.approx([7 / 11] * 3)


# name: (gold, guessed, conlleval's counts (gold, guessed, correct), overall and per type)
HAND = {
    # I-NP after I-VP starts an NP chunk in both: the type alone ends and starts a chunk.
    "i_after_another_type": (
        [["I-VP", "I-NP", "I-NP"]],
        [["B-VP", "B-NP", "I-NP"]],
        {"": (2, 2, 2), "NP": (1, 1, 1), "VP": (1, 1, 1)},
    ),
    # Two chunks only if the sentence boundary splits them: I-NP opens sentence 2's chunk.
    "boundary_splits": (
        [["B-NP", "I-NP"], ["I-NP", "I-NP"]],
        [["B-NP", "I-NP"], ["B-NP", "I-NP"]],
        {"": (2, 2, 2), "NP": (2, 2, 2)},
    ),
    # A chunk is right only if both ends are: B-NP B-NP guesses two one-token chunks.
    "split_guess": (
        [["B-NP", "I-NP", "O"]],
        [["B-NP", "B-NP", "O"]],
        {"": (1, 2, 0), "NP": (1, 2, 0)},
    ),
    # A hyphenated type that looks like a tag: B-I-Z is a chunk of type I-Z, then I-Z continues it.
    "type_spelled_like_a_tag": (
        [["B-I-Z", "I-I-Z", "B-X-Y"]],
        [["I-I-Z", "I-I-Z", "I-X-Y"]],
        {"": (2, 2, 2), "I-Z": (1, 1, 1), "X-Y": (1, 1, 1)},
    ),
}


@pytest.mark.parametrize("name", HAND)
def test_hand_cases_agree_with_the_port(name):
    gold, guessed, expected = HAND[name]
    assert conlleval(gold, guessed) == expected
    assert project_counts(gold, guessed) == expected


def test_random_pairs_agree_with_conlleval_overall_and_per_type():
    """Counts, precision, recall and F1, overall and per type, on 300 seeded random pairs; and
    over all of them as one corpus."""
    for seed in SEEDS:
        gold, guessed = random_pair(seed)
        expected = conlleval(gold, guessed)
        assert project_counts(gold, guessed) == expected, f"seed {seed}: gold {gold}, guessed {guessed}"
        assert project_scores(gold, guessed) == pytest.approx(conlleval_scores(expected)), seed
    pairs = [random_pair(seed) for seed in SEEDS]
    gold = [s for g, _ in pairs for s in g]
    guessed = [s for _, p in pairs for s in p]
    assert project_scores(gold, guessed) == pytest.approx(conlleval_scores(conlleval(gold, guessed)))


def test_random_pairs_exercise_the_rules_that_set_conlleval_apart():
    """The random pairs are not all easy: they hold chunks opened by I- (after O, after another
    type, at a sentence start), hyphenated types, and partly right guesses."""
    opened_by_i = hyphenated = partly_right = 0
    for seed in SEEDS:
        gold, guessed = random_pair(seed)
        for tags in (*gold, *guessed):
            previous = ["O", *tags]
            opened_by_i += sum(
                tag.startswith("I-") and (prev == "O" or split_tag(prev)[1] != split_tag(tag)[1])
                for prev, tag in zip(previous, tags)
            )
        counts = conlleval(gold, guessed)
        hyphenated += sum("-" in t for t in counts)
        partly_right += 0 < counts[""][2] < counts[""][0]
    assert opened_by_i > 1000 and hyphenated > 300 and partly_right > 150
