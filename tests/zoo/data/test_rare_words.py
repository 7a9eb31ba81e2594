"""Rare words as WikiText writes them: counted on words (runs of word characters), replaced by
`<unk>` below the threshold, the text between words untouched."""

from __future__ import annotations

from zoo.data.rare_words import UNK, replace_rare, word_counts


def test_words_are_runs_of_word_characters_in_any_script():
    counts = word_counts(["Smith's well-known café, 1,000 km.", "café"])
    assert counts == {"Smith": 1, "s": 1, "well": 1, "known": 1, "café": 2, "1": 1, "000": 1, "km": 1}


def test_words_below_the_threshold_and_unseen_words_become_unk():
    counts = word_counts(["the cat sat on the mat", "the cat ran"])
    text = ["the cat, a dog's mat!"]
    assert replace_rare(text, counts, 2) == (
        [f"the cat, {UNK} {UNK}'{UNK} {UNK}!"],
        4,
        6,
    )
    assert replace_rare(text, counts, 3) == (
        [f"the {UNK}, {UNK} {UNK}'{UNK} {UNK}!"],
        5,
        6,
    )


def test_a_threshold_below_one_keeps_the_text():
    texts = ["anything at all"]
    assert replace_rare(texts, word_counts([]), 0) == (texts, 0, 0)
