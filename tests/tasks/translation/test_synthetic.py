import re

import pytest

from tasks.translation.synthetic import (
    ADJECTIVES,
    INTRANSITIVE,
    NOUNS,
    THAT_VERBS,
    TIMES,
    TRANSITIVE,
    Clause,
    Phrase,
    Sentence,
    english_vocabulary,
    generate,
    splits,
)


def np_(*words: str, plural: bool = False) -> Phrase:
    """np_("the", "big", "dog") -> a Phrase; a single capitalised word is a name."""
    if len(words) == 1 and words[0][0].isupper():
        return Phrase(name=words[0])
    *det, noun = words
    adjective = det.pop() if det and det[-1] in ADJECTIVES else None
    return Phrase(noun=NOUNS[noun], determiner=det[0] if det else "", adjective=adjective, plural=plural)


def pair(sentence: Sentence) -> tuple[str, str]:
    return sentence.english(), sentence.german()


SEES = TRANSITIVE["sees"]


@pytest.mark.parametrize(
    "subject,obj,english,german",
    [
        (
            np_("the", "big", "dog"),
            np_("the", "small", "dog"),
            "The big dog sees the small dog.",
            "Der große Hund sieht den kleinen Hund.",
        ),
        (
            np_("a", "old", "cat"),
            np_("a", "young", "horse"),
            "An old cat sees a young horse.",
            "Eine alte Katze sieht ein junges Pferd.",
        ),
        (
            np_("a", "red", "apple"),
            np_("a", "blue", "apple"),
            "A red apple sees a blue apple.",
            "Ein roter Apfel sieht einen blauen Apfel.",
        ),
        (
            np_("my", "child"),
            np_("our", "student"),
            "My child sees our student.",
            "Mein Kind sieht unseren Studenten.",
        ),
        (
            np_("no", "old", "man", plural=True),
            np_("big", "dog", plural=True),
            "No old men see big dogs.",
            "Keine alten Männer sehen große Hunde.",
        ),
        (np_("the", "cow", plural=True), np_("Anna"), "The cows see Anna.", "Die Kühe sehen Anna."),
    ],
)
def test_articles_and_adjectives_agree_in_gender_number_and_case(subject, obj, english, german):
    assert pair(Sentence(Clause(subject, SEES, obj))) == (english, german)


@pytest.mark.parametrize(
    "prep,phrase,german",
    [
        ("with", np_("the", "old", "cow", plural=True), "mit den alten Kühen"),
        ("with", np_("the", "child", plural=True), "mit den Kindern"),
        ("with", np_("a", "small", "house"), "mit einem kleinen Haus"),
        ("with", np_("her", "mother"), "mit ihrer Mutter"),
        ("with", np_("big", "car", plural=True), "mit großen Autos"),
        ("for", np_("the", "boy"), "für den Jungen"),
        ("without", np_("a", "new", "coat"), "ohne einen neuen Mantel"),
    ],
)
def test_prepositions_govern_case(prep, phrase, german):
    clause = Clause(np_("Anna"), INTRANSITIVE["sings"], prep=(prep, phrase))
    english, translation = pair(Sentence(clause))
    assert english == f"Anna sings {prep} {' '.join(phrase.english())}."
    assert translation == f"Anna singt {german}."


def test_fronted_time_phrase_puts_the_verb_second():
    plain = Clause(np_("the", "dog"), SEES, np_("the", "cat"), time=TIMES["today"])
    assert pair(Sentence(plain)) == ("The dog sees the cat today.", "Der Hund sieht heute die Katze.")
    fronted = Clause(np_("the", "dog"), SEES, np_("the", "cat"), time=TIMES["on Monday"], fronted=True)
    assert pair(Sentence(fronted)) == (
        "On Monday the dog sees the cat.",
        "Am Montag sieht der Hund die Katze.",
    )


def test_past_becomes_perfect_with_the_verbs_auxiliary():
    seen = Clause(
        np_("the", "dog", plural=True),
        SEES,
        np_("the", "cat"),
        time=TIMES["yesterday"],
        past=True,
        fronted=True,
    )
    assert pair(Sentence(seen)) == (
        "Yesterday the dogs saw the cat.",
        "Gestern haben die Hunde die Katze gesehen.",
    )
    went = Clause(np_("Max"), INTRANSITIVE["goes"], manner="quickly", past=True)
    assert pair(Sentence(went)) == ("Max went quickly.", "Max ist schnell gegangen.")


def test_subordinate_clauses_are_verb_final():
    sub = Clause(
        np_("the", "dog"), SEES, np_("the", "cat"), time=TIMES["often"], prep=("with", np_("the", "girl"))
    )
    because = Sentence(Clause(np_("Lisa"), INTRANSITIVE["laughs"]), "because", sub)
    assert pair(because) == (
        "Lisa laughs because the dog sees the cat with the girl often.",
        "Lisa lacht, weil der Hund oft die Katze mit dem Mädchen sieht.",
    )
    past_sub = Clause(np_("my", "friend", plural=True), TRANSITIVE["looks for"], np_("a", "key"), past=True)
    that = Sentence(
        Clause(np_("the", "teacher"), THAT_VERBS["knows"], time=TIMES["yesterday"], past=True, fronted=True),
        "that",
        past_sub,
    )
    assert pair(that) == (
        "Yesterday the teacher knew that my friends looked for a key.",
        "Gestern hat der Lehrer gewusst, dass meine Freunde einen Schlüssel gesucht haben.",
    )


def test_knows_translates_by_context():
    knows_dog = Sentence(Clause(np_("Paul"), TRANSITIVE["knows"], np_("the", "dog")))
    assert pair(knows_dog) == ("Paul knows the dog.", "Paul kennt den Hund.")
    knows_that = Sentence(
        Clause(np_("Paul"), THAT_VERBS["knows"]), "that", Clause(np_("the", "dog"), INTRANSITIVE["sleeps"])
    )
    assert pair(knows_that) == ("Paul knows that the dog sleeps.", "Paul weiß, dass der Hund schläft.")


FINITE_FORMS = {
    form
    for verb in (*TRANSITIVE.values(), *INTRANSITIVE.values(), *THAT_VERBS.values())
    for form in (verb.de_3sg, verb.de_3pl)
} | {"hat", "haben", "ist", "sind"}


def test_generated_pairs_follow_the_word_order_rules():
    pairs = generate(2000, seed=3)
    subordinate = [de for _, de in pairs if re.search(r", (dass|weil) ", de)]
    assert len(subordinate) > 500
    for de in subordinate:  # the clause after dass/weil ends with its finite verb
        assert de.rstrip(".").split()[-1] in FINITE_FORMS, de
    fronted = 0
    for en, de in pairs:
        time = next((t for t in TIMES.values() if en.startswith(upper_first(t.en) + " ")), None)
        if time:  # verb second: the time phrase, then the finite verb
            fronted += 1
            assert de.startswith(upper_first(time.de) + " "), (en, de)
            assert de[len(time.de) + 1 :].split()[0] in FINITE_FORMS, (en, de)
    assert fronted > 100


def upper_first(text: str) -> str:
    return text[0].upper() + text[1:]


def test_generation_is_deterministic_and_translation_is_a_function():
    assert generate(300, seed=7) == generate(300, seed=7)
    assert generate(300, seed=7) != generate(300, seed=8)
    first, second = dict(generate(3000, seed=1)), dict(generate(3000, seed=2))
    shared = first.keys() & second.keys()
    assert shared and all(first[en] == second[en] for en in shared)


def test_splits_are_disjoint_and_sized():
    train, valid, test = splits(0, train=3000, valid=200, test=200)
    assert (len(train), len(valid), len(test)) == (3000, 200, 200)
    sources = [{en for en, _ in split} for split in (train, valid, test)]
    assert sum(map(len, sources)) == len(set.union(*sources)) == 3400
    assert splits(0, train=3000, valid=200, test=200)[2] == test


def test_vocabulary_size_and_coverage():
    vocabulary = english_vocabulary()
    assert 400 <= len(vocabulary) <= 600
    used = {w.strip(".,").lower() for en, _ in generate(20000, seed=0) for w in en.split()}
    assert used <= vocabulary
    assert len(used) >= 0.95 * len(vocabulary)
