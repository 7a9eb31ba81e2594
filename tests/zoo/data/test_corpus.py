"""The built-in corpus: seeded, multi-sentence, one entity per document."""

from __future__ import annotations

import hashlib

from zoo.data.corpus import KINDS, synthetic_documents


def test_seeded_multi_sentence_documents_follow_their_script():
    documents = synthetic_documents(200, seed=7)
    assert [d.sentences for d in documents] == [d.sentences for d in synthetic_documents(200, seed=7)]
    assert [d.sentences for d in documents] != [d.sentences for d in synthetic_documents(200, seed=8)]
    assert {d.title.split()[0] for d in documents} == set(KINDS)
    for document in documents:
        kind, name = document.title.split()
        assert 5 <= len(document.sentences) <= 7
        assert sum(name in s for s in document.sentences) >= 2  # the entity recurs
        assert all("{" not in s for s in document.sentences)


def test_documents_are_those_the_recipes_were_tuned_on():
    """The corpus moved from tasks/bert to the library unchanged: BERT's default recipe (and its
    recorded runs) still sees the same documents for the same seed."""
    documents = synthetic_documents(50, seed=0)
    digest = hashlib.sha256(repr([(d.title, d.sentences) for d in documents]).encode()).hexdigest()
    assert documents[0].title == "mountain thomeknes"
    assert digest[:16] == "60ffd4b18fff0726"
