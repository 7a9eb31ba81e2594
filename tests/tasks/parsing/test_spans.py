"""Trees to labelled spans (unary chains collapsed) and back."""

from __future__ import annotations

from nltk import Tree

from tasks.parsing.grammar import grammar_treebank
from tasks.parsing.spans import spans_tree, tree_spans

TREE = Tree.fromstring("(S (NP (PRP It)) (VP (VBD said) (SBAR (S (VP (TO to) (VP (VB go)))))) (. .))")


def test_unary_chains_collapse_into_one_label() -> None:
    assert tree_spans(TREE) == [(0, 5, "S"), (0, 1, "NP"), (1, 4, "VP"), (2, 4, "SBAR+S+VP"), (3, 4, "VP")]


def round_trip(tree: Tree) -> Tree:
    words, tags = zip(*tree.pos())
    return spans_tree(tree_spans(tree), list(words), list(tags))


def test_round_trip_is_the_identity() -> None:
    assert round_trip(TREE) == TREE
    for trees in grammar_treebank(3, (100, 0, 0)).values():
        assert all(round_trip(t) == t for t in trees)


def test_spans_without_a_root_go_under_top_and_empty_labels_are_skipped() -> None:
    tree = spans_tree([(0, 1, "NP"), (1, 2, ""), (0, 2, "")], ["a", "b"], ["DT", "NN"])
    assert tree == Tree.fromstring("(TOP (NP (DT a)) (NN b))")
