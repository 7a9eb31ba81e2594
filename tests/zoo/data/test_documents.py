"""Reading documents: WikiExtractor, plain text and WikiText, with filtered lines counted."""

from __future__ import annotations

import pytest

from zoo.config import UserError
from zoo.data.documents import read_documents, split_sentences

WIKI = """<doc id="1" url="http://en.wikipedia.org/wiki?curid=1" title="Lobster">
Lobster

Lobsters are marine crustaceans with long bodies. They live on rocky sea floors near the coast.
History.
Dr. Smith caught the first one in Jan. 1900 near Boston. Its value was formula_1 dollars in all.
</doc>
<doc id="2" url="http://en.wikipedia.org/wiki?curid=2" title="Empty">
Empty

See also.
</doc>
"""


def test_wikiextractor_drops_title_headings_markup_and_empty_documents(tmp_path):
    path = tmp_path / "wiki_00"
    path.write_text(WIKI)
    documents, counts = read_documents([path], "wikiextractor")
    assert [d.title for d in documents] == ["Lobster"]
    assert documents[0].sentences == [
        "Lobsters are marine crustaceans with long bodies.",
        "They live on rocky sea floors near the coast.",
        "Dr. Smith caught the first one in Jan. 1900 near Boston.",
    ]
    assert (counts.documents, counts.sentences, counts.headings, counts.markup, counts.empty_documents) == (
        1,
        3,
        2,
        1,
        1,
    )


def test_plain_text_blocks_are_documents_lines_are_paragraphs(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("One sentence here. Another one here.\nA third line.\n\n\nSecond document.\n")
    documents, counts = read_documents([path], "text")
    assert [d.sentences for d in documents] == [
        ["One sentence here.", "Another one here.", "A third line."],
        ["Second document."],
    ]
    assert counts.headings == 0  # plain text keeps short lines


def test_wikitext_articles_headings_and_joins(tmp_path):
    path = tmp_path / "valid.txt"
    path.write_text(
        " \n = Lobster = \n \n It is 0 @.@ 7 kg and well @-@ known . It eats <unk> .\n"
        " \n = = Habitat = = \n \n It lives in the sea .\n = Crab = \n \n Crabs walk .\n"
    )
    documents, counts = read_documents([path], "wikitext")
    assert [(d.title, d.sentences) for d in documents] == [
        ("Lobster", ["It is 0.7 kg and well-known .", "It eats [UNK] .", "It lives in the sea ."]),
        ("Crab", ["Crabs walk ."]),
    ]
    assert counts.headings == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ("stray text\n", "outside <doc>"),
        ('<doc id="1" title="A">\nA\nbody\n', "ends inside"),
        ("</doc>\n", "without an opening"),
    ],
)
def test_malformed_wikiextractor_file_is_one_user_error(tmp_path, text, message):
    path = tmp_path / "wiki_00"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        read_documents([path], "wikiextractor")


def test_split_sentences_keeps_abbreviations_and_decimals():
    assert split_sentences("Mr. J. R. Smith paid 3.5 dollars. He left.") == [
        "Mr. J. R. Smith paid 3.5 dollars.",
        "He left.",
    ]
