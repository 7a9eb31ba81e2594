"""Labeled bracket scoring as EVALB computes it with COLLINS.prm (Sekine & Collins, 1997), and
`python -m tasks.parsing.evalb GOLD TEST`, the scorer on files (one tree a line, as EVALB reads).

The rules, as evalb.c applies them to each gold/test pair (nltk/EVALB's evalb.c and COLLINS.prm:
DELETE_LABEL TOP -NONE- , : `` '' . ; DELETE_LABEL_FOR_LENGTH -NONE-; EQ_LABEL ADVP PRT):
1. Words whose part-of-speech tag is a deleted label (`, : `` '' .` and -NONE-, compared whole)
   are removed from each tree by its own tags; bracket positions count the remaining words.
2. A sentence whose remaining word counts differ, or whose words differ, is an error: reported,
   not scored. A test tree with no words (a blank line: a failed parse) is skipped.
3. Part-of-speech brackets (a tag over one word) are not brackets. A phrase label is cut at its
   first `-` or `=` (NP-SBJ -> NP, and -NONE- or -X- -> the empty label); brackets that cover no
   remaining word, then brackets whose cut label is a deleted one (TOP) are ignored; ADVP and
   PRT are the same label. A bracket with an empty label counts like any other: the nameless
   PTB root `( (S ...))` and labels cut to nothing. `EvalbParams.drop_empty_labels` (the
   scorer's --drop-empty-labels) ignores them as TOP is, which evalb.c does not.
4. Repeated brackets (same label and span, as in a unary NP -> NP) count one for one: the
   matched count is the size of the multiset intersection.
5. Recall = matched / gold brackets, precision = matched / test brackets, summed over valid
   sentences; complete match = sentences whose gold and test bracket multisets are equal;
   tagging accuracy over the remaining words; crossing = test brackets that cross a gold one.
The `len<=40` section counts words without -NONE- (punctuation included), as EVALB does.

Errors: evalb.c exits with no summary once its error count passes MAX_ERROR (10 in COLLINS.prm;
it tests `Error_count++ > Max_error`, so the 12th error sentence stops it). Here every sentence is
scored and the report says how many were errors, with a warning past that limit: the scores are
then over the valid sentences only, which evalb.c would never have printed.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nltk import Tree

from tasks.parsing.trees import read_sentences
from zoo.cli import main_guard
from zoo.config import UserError

Bracket = tuple[str, int, int]
# One sentence as EVALB reads it: a tree, the trees of one line, or nothing (a blank line).
Sentence = Tree | Sequence[Tree] | None


@dataclass(frozen=True)
class EvalbParams:
    """COLLINS.prm by default (evalb.c's own behaviour); `drop_empty_labels` is the one departure
    on offer: brackets with an empty label (after the cut) ignored, as TOP is."""

    delete_labels: frozenset[str] = frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."})
    delete_for_length: frozenset[str] = frozenset({"-NONE-"})
    equal_labels: tuple[tuple[str, str], ...] = (("ADVP", "PRT"),)
    cutoff_len: int = 40
    max_error: int = 10  # MAX_ERROR: past it evalb.c stops; here a warning (module docstring)
    drop_empty_labels: bool = False

    def canonical(self, label: str) -> str:
        """The label brackets are compared by (after EQ_LABEL)."""
        for first, second in self.equal_labels:
            if label == second:
                return first
        return label

    def ignores(self, label: str) -> bool:
        """Whether a bracket with this (cut) label is ignored: a deleted label, compared as
        evalb.c's label_comp compares (EQ_LABEL pairs equal), or an empty one if so chosen."""
        if self.drop_empty_labels and label == "":
            return True
        return self.canonical(label) in {self.canonical(x) for x in self.delete_labels}


COLLINS = EvalbParams()


def _cut(label: str) -> str:
    """evalb.c's modify_label: everything from the first '-' or '=' is dropped."""
    for i, char in enumerate(label):
        if char in "-=":
            return label[:i]
    return label


@dataclass
class Scored:
    """What EVALB reads off one tree: kept words with their tags, brackets, and the length."""

    words: list[str]
    tags: list[str]
    brackets: Counter[Bracket]
    length: int


def read_tree(sentence: Sentence, params: EvalbParams = COLLINS) -> Scored:
    """Words, tags, bracket multiset {(label, start, end): count} and length of a sentence: one
    tree, or the trees of one line read as one sentence (as EVALB does), or None (a blank line)."""
    words, tags, brackets, length = [], [], Counter(), 0

    def walk(node: Tree) -> None:
        nonlocal length
        if len(node) == 1 and isinstance(node[0], str):
            length += node.label() not in params.delete_for_length
            if node.label() not in params.delete_labels:
                words.append(node[0])
                tags.append(node.label())
            return
        start = len(words)
        for child in node:
            walk(child)
        label = params.canonical(_cut(node.label()))
        if len(words) > start and not params.ignores(label):
            brackets[(label, start, len(words))] += 1

    for tree in [sentence] if isinstance(sentence, Tree) else sentence or []:
        walk(tree)
    return Scored(words, tags, brackets, length)


@dataclass
class Totals:
    """Sums over the valid sentences of one section (all, or len <= cutoff)."""

    sentences: int = 0
    errors: int = 0
    skipped: int = 0
    gold: int = 0
    test: int = 0
    matched: int = 0
    complete: int = 0
    crossing: int = 0
    no_crossing: int = 0
    two_or_less: int = 0
    words: int = 0
    correct_tags: int = 0

    @property
    def valid(self) -> int:
        return self.sentences - self.errors - self.skipped

    @property
    def recall(self) -> float:
        return 100.0 * self.matched / self.gold if self.gold else 0.0

    @property
    def precision(self) -> float:
        return 100.0 * self.matched / self.test if self.test else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def exact(self) -> float:
        return 100.0 * self.complete / self.valid if self.valid else 0.0

    @property
    def tagging(self) -> float:
        return 100.0 * self.correct_tags / self.words if self.words else 0.0


@dataclass
class EvalbResult:
    """Totals for all sentences and for len <= cutoff, per-label counts, and the errors."""

    all: Totals = field(default_factory=Totals)
    short: Totals = field(default_factory=Totals)
    cutoff_len: int = 40
    labels: dict[str, list[int]] = field(default_factory=dict)  # label -> [gold, test, matched]
    errors: list[str] = field(default_factory=list)
    max_error: int = 10

    @property
    def past_max_error(self) -> bool:
        """Whether evalb.c would have stopped, printing no summary (`Error_count++ > Max_error`)."""
        return self.all.errors > self.max_error + 1

    def error_note(self) -> str:
        """One line on the error sentences ('' without any), a warning when evalb.c would have
        stopped."""
        t = self.all
        if not t.errors:
            return ""
        note = f"{t.errors} error sentence(s) of {t.sentences} not scored: the scores are over {t.valid}"
        if self.past_max_error:
            note = f"WARNING: {note}; {self._stop_note()}"
        return note

    def error_count(self) -> str:
        """The error sentences in a few words, for a summary line: '0 errors', '3 errors (not
        scored)', or a warning when evalb.c would have stopped."""
        n = self.all.errors
        if not n:
            return "0 errors"
        return f"{n} errors (not scored{'; WARNING: ' + self._stop_note() if self.past_max_error else ''})"

    def _stop_note(self) -> str:
        return (
            f"evalb.c (MAX_ERROR {self.max_error}) would have stopped at error {self.max_error + 2} "
            "and printed no scores"
        )

    def metrics(self, tags: bool = True) -> dict[str, float]:
        """F1, precision, recall, exact match, tagging accuracy (unless not `tags`), errors."""
        a = self.all
        out = {
            "f1": a.f1,
            "precision": a.precision,
            "recall": a.recall,
            "exact": a.exact,
            "tagging": a.tagging,
            "errors": float(a.errors),
        }
        if not tags:
            del out["tagging"]
        return out


def _crossing(gold: Counter[Bracket], test: Counter[Bracket]) -> int:
    spans = [(s, e) for _, s, e in gold]
    count = 0
    for (_, ts, te), n in test.items():
        if any(gs < ts < ge < te or ts < gs < te < ge for gs, ge in spans):
            count += n
    return count


def evalb(
    gold_trees: Sequence[Sentence], test_trees: Sequence[Sentence], params: EvalbParams = COLLINS
) -> EvalbResult:
    """Score test sentences against gold ones, pair by pair, as EVALB does (module docstring);
    a sentence is a tree, the trees of one line, or None for a blank line."""
    if len(gold_trees) != len(test_trees):
        raise ValueError(f"{len(gold_trees)} gold trees but {len(test_trees)} test trees")
    result = EvalbResult(cutoff_len=params.cutoff_len, max_error=params.max_error)
    for index, (gold_tree, test_tree) in enumerate(zip(gold_trees, test_trees), start=1):
        gold, test = read_tree(gold_tree, params), read_tree(test_tree, params)
        sections = [result.all] + ([result.short] if gold.length <= params.cutoff_len else [])
        for totals in sections:
            totals.sentences += 1
        if not test.words:
            for totals in sections:
                totals.skipped += 1
            continue
        error = None
        if len(gold.words) != len(test.words):
            error = f"sentence {index}: length unmatch ({len(gold.words)}|{len(test.words)})"
        elif gold.words != test.words:
            g, t = next((g, t) for g, t in zip(gold.words, test.words) if g != t)
            error = f"sentence {index}: words unmatch ({g}|{t})"
        if error:
            result.errors.append(error)
            for totals in sections:
                totals.errors += 1
            continue
        matched = gold.brackets & test.brackets
        crossing = _crossing(gold.brackets, test.brackets)
        for totals in sections:
            totals.gold += sum(gold.brackets.values())
            totals.test += sum(test.brackets.values())
            totals.matched += sum(matched.values())
            totals.complete += gold.brackets == test.brackets
            totals.crossing += crossing
            totals.no_crossing += crossing == 0
            totals.two_or_less += crossing <= 2
            totals.words += len(gold.words)
            totals.correct_tags += sum(
                params.canonical(g) == params.canonical(t) for g, t in zip(gold.tags, test.tags)
            )
        for column, counts in enumerate((gold.brackets, test.brackets, matched)):
            for (label, _, _), n in counts.items():
                result.labels.setdefault(label, [0, 0, 0])[column] += n
    return result


def _section(name: str, t: Totals) -> list[str]:
    rows = [
        ("Number of sentence", f"{t.sentences:6d}"),
        ("Number of Error sentence", f"{t.errors:6d}"),
        ("Number of Skip  sentence", f"{t.skipped:6d}"),
        ("Number of Valid sentence", f"{t.valid:6d}"),
        ("Bracketing Recall", f"{t.recall:6.2f}"),
        ("Bracketing Precision", f"{t.precision:6.2f}"),
        ("Bracketing FMeasure", f"{t.f1:6.2f}"),
        ("Complete match", f"{t.exact:6.2f}"),
        ("Average crossing", f"{t.crossing / t.valid if t.valid else 0.0:6.2f}"),
        ("No crossing", f"{100.0 * t.no_crossing / t.valid if t.valid else 0.0:6.2f}"),
        ("2 or less crossing", f"{100.0 * t.two_or_less / t.valid if t.valid else 0.0:6.2f}"),
        ("Tagging accuracy", f"{t.tagging:6.2f}"),
    ]
    return [f"\n-- {name} --"] + [f"{key:<26}= {value}" for key, value in rows]


def report(result: EvalbResult) -> str:
    """EVALB's summary (All and len<=cutoff), then P/R/F1 per label, then the errors; the error
    count first of all when there are any (with a warning past evalb.c's MAX_ERROR)."""
    note = result.error_note()
    lines = ([note, ""] if note else []) + ["=== Summary ==="]
    lines += _section("All", result.all) + _section(f"len<={result.cutoff_len}", result.short)
    lines += [
        "",
        "=== Per label ===",
        f"{'label':<8} {'gold':>6} {'test':>6} {'match':>6} {'recall':>7} {'prec.':>7} {'F1':>7}",
    ]
    for label, (gold, test, matched) in sorted(result.labels.items(), key=lambda kv: -kv[1][0]):
        r = 100.0 * matched / gold if gold else 0.0
        p = 100.0 * matched / test if test else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        name = label or '""'  # the nameless root, or a label cut to nothing
        lines.append(f"{name:<8} {gold:6d} {test:6d} {matched:6d} {r:7.2f} {p:7.2f} {f:7.2f}")
    if result.errors:
        lines += ["", f"=== Errors ({len(result.errors)}) ==="] + result.errors
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tasks.parsing.evalb",
        description="Labeled bracket scores of TEST against GOLD as evalb.c computes them with "
        "COLLINS.prm (see tasks/parsing/evalb.py), unless an option says otherwise. Both files "
        "hold one sentence a line, as EVALB reads them: a blank test line (a failed parse) is a "
        "skipped sentence, several trees on one line are one sentence. Error sentences (words "
        "that differ) are counted and scored as none; evalb.c stops past MAX_ERROR of them and "
        "prints nothing, this scorer warns and scores the rest.",
    )
    parser.add_argument("gold", type=Path, help="gold trees, one sentence a line")
    parser.add_argument("test", type=Path, help="parsed trees, one sentence a line (blank: no parse)")
    parser.add_argument(
        "--drop-empty-labels",
        action="store_true",
        help="also ignore brackets whose label is empty (the nameless PTB root '( (S ...))', "
        "labels cut to nothing such as -X-), as TOP is: the project's choice, not evalb.c's "
        "(default: counted, as evalb.c with COLLINS.prm counts them)",
    )
    parser.add_argument(
        "--max-error",
        type=int,
        default=COLLINS.max_error,
        help="evalb.c's MAX_ERROR: warn where evalb.c would have stopped with no summary, past "
        "MAX_ERROR + 1 error sentences (it tests Error_count++ > MAX_ERROR) (default: "
        "%(default)s, COLLINS.prm's)",
    )
    parser.add_argument(
        "--cutoff-len",
        type=int,
        default=COLLINS.cutoff_len,
        help="the length of the short-sentence section (default: %(default)s)",
    )
    return parser


def score_files(gold: Path, test: Path, params: EvalbParams = COLLINS) -> EvalbResult:
    """EVALB of two files of one sentence a line (tasks.parsing.trees.read_sentences).

    Raises:
        UserError: a file that cannot be read as trees (named with its line), or files whose
            numbers of lines differ.
    """
    gold_sentences, test_sentences = read_sentences(gold), read_sentences(test)
    if len(gold_sentences) != len(test_sentences):
        raise UserError(
            f"{gold} has {len(gold_sentences)} lines but {test} has {len(test_sentences)}: "
            "one sentence a line in both (a blank test line for a failed parse)"
        )
    return evalb(gold_sentences, test_sentences, params)


@main_guard
def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    params = EvalbParams(
        cutoff_len=args.cutoff_len, max_error=args.max_error, drop_empty_labels=args.drop_empty_labels
    )
    result = score_files(args.gold, args.test, params)
    print(report(result))
    if result.past_max_error:
        print(result.error_note(), file=sys.stderr)


if __name__ == "__main__":
    main()
