"""Each EVALB (COLLINS.prm) rule on hand-made trees."""

from __future__ import annotations

import pytest
from nltk import Tree

from tasks.parsing.evalb import evalb, read_tree, report

T = Tree.fromstring


def score(gold: str, test: str):
    return evalb([T(gold)], [T(test)])


def test_identical_trees_score_100() -> None:
    tree = "(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))"
    result = score(tree, tree)
    assert (result.all.f1, result.all.exact, result.all.tagging) == (100.0, 100.0, 100.0)
    assert result.all.gold == 3  # S, NP, VP: the POS brackets are not brackets


def test_punctuation_is_deleted_before_positions_are_counted() -> None:
    # Gold puts the comma inside NP, test outside: same bracket once the comma is gone.
    gold = "(S (NP (NN a) (, ,)) (VP (VB b)) (. .))"
    test = "(S (NP (NN a)) (, ,) (VP (VB b)) (. .))"
    assert score(gold, test).all.f1 == 100.0
    assert read_tree(T(gold)).brackets == {("S", 0, 2): 1, ("NP", 0, 1): 1, ("VP", 1, 2): 1}
    # A phrase over punctuation only covers no word: ignored.
    assert read_tree(T("(S (NP (NN a)) (PRN (: --)) (`` ``) ('' ''))")).brackets == {
        ("S", 0, 1): 1,
        ("NP", 0, 1): 1,
    }


def test_top_is_ignored() -> None:
    assert score("(TOP (S (NN a) (VB b)))", "(S (NN a) (VB b))").all.f1 == 100.0
    assert read_tree(T("( (S (NN a)))")).brackets == {("S", 0, 1): 1}  # the nameless PTB root


def test_advp_equals_prt() -> None:
    result = score("(S (VP (VB give) (PRT (RP up))))", "(S (VP (VB give) (ADVP (RP up))))")
    assert result.all.f1 == 100.0


def test_function_tags_are_cut() -> None:
    assert score("(S (NP-SBJ-1 (NN a)) (VP (VB b)))", "(S (NP (NN a)) (VP (VB b)))").all.f1 == 100.0


def test_repeated_brackets_count_one_for_one() -> None:
    gold = "(S (NP (NP (NN a))) (VP (VB b)))"  # NP over NP: two NP (0, 1)
    test = "(S (NP (NN a)) (VP (VB b)))"
    result = score(gold, test)
    assert (result.all.gold, result.all.test, result.all.matched) == (4, 3, 3)
    assert result.all.exact == 0.0
    assert score(test, gold).all.precision == 75.0


def test_length_mismatch_is_an_error_not_scored() -> None:
    good = "(S (NN a) (VB b))"
    result = evalb([T(good), T(good), T(good)], [T(good), T("(S (NN a))"), T("(S (NN a) (VB c))")])
    assert (result.all.sentences, result.all.errors, result.all.valid) == (3, 2, 1)
    assert result.all.gold == 1 and result.all.f1 == 100.0
    assert "length unmatch (2|1)" in result.errors[0] and "words unmatch (b|c)" in result.errors[1]
    assert "Number of Error sentence  =      2" in report(result)


def test_scores_tags_crossing_and_per_label() -> None:
    gold = "(S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (PRP it))))"
    test = "(S (NP (DT the) (NN dog) (VBD saw)) (VP (NN it)))"
    result = score(gold, test)
    # gold S(0,4) NP(0,2) VP(2,4) NP(3,4); test S(0,4) NP(0,3) VP(3,4)
    assert (result.all.gold, result.all.test, result.all.matched) == (4, 3, 1)
    assert result.all.recall == 25.0 and result.all.precision == pytest.approx(100 / 3)
    assert result.all.tagging == 75.0
    assert result.labels["NP"] == [2, 1, 0] and result.labels["S"] == [1, 1, 1]
    assert result.all.crossing == 1  # test NP (0, 3) crosses gold VP (2, 4)
    nested = score("(S (NP (NN a) (NN b)) (VP (VB c)))", "(S (X (Y (NN a)) (NN b)) (VB c))")
    assert nested.all.crossing == 0


def test_empty_test_tree_is_skipped_and_short_section_counts_punctuation() -> None:
    long_gold = "(S " + " ".join(["(NN w)"] * 40) + " (. .))"
    result = evalb([T(long_gold), T("(S (NN a))")], [T(long_gold), T("(S (. .))")])
    assert result.all.skipped == 1
    assert result.short.sentences == 1  # 41 words with the full stop: only the second is <= 40
