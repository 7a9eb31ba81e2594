"""Each EVALB (COLLINS.prm) rule on hand-made trees."""

from __future__ import annotations

import pytest
from nltk import Tree

from tasks.parsing.evalb import EvalbParams, evalb, main, read_tree, report

T = Tree.fromstring
DROP_EMPTY = EvalbParams(drop_empty_labels=True)


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
    assert read_tree(T("(TOP-1 (S (NN a)))")).brackets == {("S", 0, 1): 1}  # cut, then deleted


def test_the_nameless_root_counts_as_evalb_c_counts_it() -> None:
    # Raw PTB gold against a parse without the nameless root. By hand (COLLINS.prm): the words
    # left are The cat sat (-NONE- and the full stop deleted); gold brackets "" (0,3), S (0,3),
    # NP (0,2), VP (2,3) (the NP over the trace covers no word: ignored), test S, NP, VP.
    gold = "( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (NP (-NONE- *T*-1))) (. .)) )"
    test = "(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))"
    assert read_tree(T(gold)).brackets == {("", 0, 3): 1, ("S", 0, 3): 1, ("NP", 0, 2): 1, ("VP", 2, 3): 1}
    assert read_tree(T(gold)).length == 4  # the full stop counts for length, the trace does not
    result = score(gold, test)
    assert (result.all.gold, result.all.test, result.all.matched) == (4, 3, 3)
    assert (result.all.recall, result.all.precision, result.all.exact) == (75.0, 100.0, 0.0)
    assert result.all.f1 == pytest.approx(2 * 75 * 100 / 175)
    assert result.labels[""] == [1, 0, 0]
    assert '""' in report(result)  # the empty label has a row of its own
    # The project's choice: the nameless root ignored as TOP is.
    dropped = evalb([T(gold)], [T(test)], DROP_EMPTY)
    assert (dropped.all.gold, dropped.all.test, dropped.all.matched) == (3, 3, 3)
    assert dropped.all.exact == 100.0


def test_labels_cut_to_nothing_count_with_the_empty_label() -> None:
    # evalb.c cuts a phrase label at its first - or = before looking it up in DELETE_LABEL, so a
    # phrase labelled -NONE- becomes "" (kept: "" is not -NONE-) and so does -PP; a word tagged
    # -NONE- is compared whole and deleted. By hand: gold S (0,3) NP (0,1) VP (1,3) PP (2,3);
    # test S (0,3) "" (0,1) VP (1,3) "" (2,3); matched S, VP.
    gold = "(S (NP (NN a)) (VP (VB b) (PP (IN c))) (-NONE- *))"
    test = "(S (-NONE- (NN a)) (VP (VB b) (-PP (IN c))))"
    assert read_tree(T(test)).brackets == {("S", 0, 3): 1, ("", 0, 1): 1, ("VP", 1, 3): 1, ("", 2, 3): 1}
    result = score(gold, test)
    assert (result.all.gold, result.all.test, result.all.matched) == (4, 4, 2)
    assert (result.all.recall, result.all.precision) == (50.0, 50.0)
    assert result.labels[""] == [0, 2, 0] and result.labels["NP"] == [1, 0, 0]
    dropped = evalb([T(gold)], [T(test)], DROP_EMPTY)
    assert (dropped.all.gold, dropped.all.test, dropped.all.matched) == (4, 2, 2)
    assert (dropped.all.recall, dropped.all.precision) == (50.0, 100.0)
    # A nameless root and a label cut to nothing over the same span are the same bracket.
    both = score("( (S (NN a) (VB b)))", "(=1 (S (NN a) (VB b)))")
    assert (both.all.gold, both.all.test, both.all.matched) == (2, 2, 2)


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


def test_several_trees_on_a_line_are_one_sentence_and_none_is_a_blank_line() -> None:
    # evalb.c reads a line's brackets as one sentence: positions run on across the trees.
    assert read_tree([T("(S (NN a))"), T("(S (NN b) (VB c))")]).brackets == {("S", 0, 1): 1, ("S", 1, 3): 1}
    good = T("(S (NN a) (VB b))")
    result = evalb([good, None, None], [None, good, None])
    # test blank: skipped (twice); gold blank against a parse: length unmatch (0|2), an error.
    assert (result.all.sentences, result.all.skipped, result.all.errors) == (3, 2, 1)
    assert "length unmatch (0|2)" in result.errors[0]


def test_errors_are_counted_first_and_warned_past_max_error() -> None:
    good, bad = T("(S (NN a) (VB b))"), T("(S (NN a))")
    within = evalb([good] * 12, [good] + [bad] * 11)  # 11 errors: evalb.c still prints its summary
    assert not within.past_max_error and within.error_count() == "11 errors (not scored)"
    assert report(within).startswith("11 error sentence(s) of 12 not scored: the scores are over 1")
    past = evalb([good] * 13, [good] + [bad] * 12)  # the 12th error stops evalb.c (MAX_ERROR 10)
    assert past.past_max_error and "WARNING" in past.error_count()
    assert report(past).startswith("WARNING: 12 error sentence(s) of 13") and "at error 12" in report(past)
    assert evalb([good], [good]).error_count() == "0 errors" and report(evalb([good], [good])).startswith(
        "==="
    )
    assert not evalb([good] * 13, [good] + [bad] * 12, EvalbParams(max_error=20)).past_max_error


def test_the_scorer_on_files(tmp_path, capsys) -> None:
    gold, test = tmp_path / "gold.mrg", tmp_path / "test.mrg"
    gold.write_text("( (S (NN a) (VB b)))\n( (S (NN c)))\n")
    test.write_text("(S (NN a) (VB b))\n\n")  # the second sentence failed to parse
    main([str(gold), str(test)])
    out = capsys.readouterr().out
    assert "Number of Skip  sentence  =      1" in out and "Bracketing Recall         =  50.00" in out
    main([str(gold), str(test), "--drop-empty-labels"])
    assert "Bracketing FMeasure       = 100.00" in capsys.readouterr().out
    test.write_text("(S (NN a) (VB b))\n")
    with pytest.raises(SystemExit) as exit:
        main([str(gold), str(test)])
    assert exit.value.code == 2 and "has 2 lines but" in capsys.readouterr().err
