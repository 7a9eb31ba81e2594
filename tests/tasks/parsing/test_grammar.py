"""The built-in treebank: seeded, unique sentences, attachment decided by the words."""

from __future__ import annotations

from tasks.parsing.grammar import LEXICON, grammar_treebank
from tasks.parsing.trees import clean


def test_seeded_unique_and_clean() -> None:
    first, again = grammar_treebank(1, (200, 20, 20)), grammar_treebank(1, (200, 20, 20))
    assert first == again and grammar_treebank(2, (200, 20, 20)) != first
    sentences = [tuple(t.leaves()) for trees in first.values() for t in trees]
    assert len(set(sentences)) == len(sentences) == 240
    assert all(clean(t) == t for trees in first.values() for t in trees)


def test_with_attaches_by_its_noun() -> None:
    trees = grammar_treebank(0, (500, 0, 0))["train"]
    parents = {"instrument": set(), "accessory": set()}
    for tree in trees:
        for node in tree.subtrees():
            for child in node:
                if not isinstance(child, str) and child.label() == "PP" and child.leaves()[0] == "with":
                    noun = child[1].leaves()[-1]
                    kind = "instrument" if noun in LEXICON["instrument"] else "accessory"
                    parents[kind].add(node.label())
    assert parents == {"instrument": {"VP"}, "accessory": {"NP"}}
