"""Labeled bracket scoring as EVALB computes it with COLLINS.prm (Sekine & Collins, 1997).

The rules, as evalb.c applies them to each gold/test pair:
1. Words whose part-of-speech tag is a deleted label (`, : `` '' .` and -NONE-) are removed
   from each tree by its own tags; bracket positions count the remaining words.
2. A sentence whose remaining word counts differ, or whose words differ, is an error: reported,
   not scored. A test tree with no words is skipped.
3. Part-of-speech brackets (a tag over one word) are not brackets. A phrase label is cut at its
   first `-` or `=` (NP-SBJ -> NP); brackets labelled TOP (here also the nameless PTB root) and
   brackets that cover no remaining word are ignored; ADVP and PRT are the same label.
4. Repeated brackets (same label and span, as in a unary NP -> NP) count one for one: the
   matched count is the size of the multiset intersection.
5. Recall = matched / gold brackets, precision = matched / test brackets, summed over valid
   sentences; complete match = sentences whose gold and test bracket multisets are equal;
   tagging accuracy over the remaining words; crossing = test brackets that cross a gold one.
The `len<=40` section counts words without -NONE- (punctuation included), as EVALB does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from nltk import Tree

Bracket = tuple[str, int, int]


@dataclass(frozen=True)
class EvalbParams:
    """COLLINS.prm by default."""

    delete_labels: frozenset[str] = frozenset({"TOP", "", "-NONE-", ",", ":", "``", "''", "."})
    delete_for_length: frozenset[str] = frozenset({"-NONE-"})
    equal_labels: tuple[tuple[str, str], ...] = (("ADVP", "PRT"),)
    cutoff_len: int = 40

    def canonical(self, label: str) -> str:
        """The label brackets are compared by (after EQ_LABEL)."""
        for first, second in self.equal_labels:
            if label == second:
                return first
        return label


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
    brackets: Counter
    length: int


def read_tree(tree: Tree, params: EvalbParams = COLLINS) -> Scored:
    """Words, tags, bracket multiset {(label, start, end): count} and length of a tree."""
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
        if len(words) > start and label not in params.delete_labels:
            brackets[(label, start, len(words))] += 1

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


def _crossing(gold: Counter, test: Counter) -> int:
    spans = [(s, e) for _, s, e in gold]
    count = 0
    for (_, ts, te), n in test.items():
        if any(gs < ts < ge < te or ts < gs < te < ge for gs, ge in spans):
            count += n
    return count


def evalb(gold_trees: list[Tree], test_trees: list[Tree], params: EvalbParams = COLLINS) -> EvalbResult:
    """Score test trees against gold trees, pair by pair, as EVALB does (module docstring)."""
    if len(gold_trees) != len(test_trees):
        raise ValueError(f"{len(gold_trees)} gold trees but {len(test_trees)} test trees")
    result = EvalbResult(cutoff_len=params.cutoff_len)
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
    """EVALB's summary (All and len<=cutoff), then P/R/F1 per label, then the errors."""
    lines = ["=== Summary ==="]
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
        lines.append(f"{label:<8} {gold:6d} {test:6d} {matched:6d} {r:7.2f} {p:7.2f} {f:7.2f}")
    if result.errors:
        lines += ["", f"=== Errors ({len(result.errors)}) ==="] + result.errors
    return "\n".join(lines)
