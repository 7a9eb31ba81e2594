"""Documents as lists of sentences, read from WikiExtractor output, plain text or WikiText: the
sentence boundaries BERT's next-sentence prediction needs, and the unlabeled sentences a parser
reads for self-training (tasks.parsing.silver).

Sentences are split by Bling Fire (`blingfire.text_to_sentences`): its model ships inside the
wheel, so splitting works offline, and it runs at about 30 MB/s on one core. Lines are
paragraphs; a sentence never spans two lines.

What is dropped, and counted in `DocumentCounts`:
- WikiExtractor section headings and list leftovers: paragraph lines shorter than
  `min_paragraph_words` words ("History.", "Early life.", "George Woodcock states:"); the
  extractor keeps headings as their own short lines, and real paragraphs that short are rare.
- sentences with leftover markup (`formula_3`, `codice_1`, `{{`, `]]`, `<br>`, `&lt;`): a
  sentence whose formula became a placeholder teaches the model nothing true.
- documents left with no sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import blingfire

from zoo.config import UserError
from zoo.data.text import read_lines

MARKUP = re.compile(r"formula_\d+|codice_\d+|\{\{|\}\}|\[\[|\]\]|</?[a-zA-Z][^>]*>|&[a-z]+;")
_DOC_OPEN = re.compile(r'^<doc\b[^>]*\btitle="([^"]*)"[^>]*>$')
# WikiText marks titles " = T = " and headings " = = H = = "; "@-@" joins intra-word punctuation.
_WIKITEXT_HEADING = re.compile(r"^=( =)* .* =( =)*$")
_WIKITEXT_TITLE = re.compile(r"^= [^=].* =$")
_WIKITEXT_JOIN = re.compile(r" @(.)@ ")


@dataclass
class Document:
    """One document: its title ('' when the source has none) and its sentences in order."""

    title: str
    sentences: list[str]


@dataclass
class DocumentCounts:
    """What reading kept and dropped, and why."""

    documents: int = 0
    sentences: int = 0
    headings: int = 0
    markup: int = 0
    empty_documents: int = 0
    files: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"{self.documents:,} documents, {self.sentences:,} sentences from "
            f"{len(self.files)} file(s); dropped {self.headings:,} headings/short lines, "
            f"{self.markup:,} sentences with markup, {self.empty_documents:,} empty documents"
        )


def split_sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph (Bling Fire's sentence breaker)."""
    paragraph = paragraph.strip()
    if not paragraph:
        return []
    return [s.strip() for s in blingfire.text_to_sentences(paragraph).split("\n") if s.strip()]


class DocumentReader:
    """Turns paragraphs into documents of clean sentences, counting what it drops.

    Args:
        min_paragraph_words: paragraph lines with fewer whitespace words are headings or list
            leftovers and are dropped (0 keeps every line; plain text uses 0).
    """

    def __init__(self, *, min_paragraph_words: int = 0) -> None:
        self.min_paragraph_words = min_paragraph_words
        self.counts = DocumentCounts()

    def document(self, title: str, paragraphs: Iterable[str]) -> Document | None:
        """The document made of `paragraphs`, or None when nothing in it survives."""
        sentences: list[str] = []
        for paragraph in paragraphs:
            if len(paragraph.split()) < self.min_paragraph_words:
                self.counts.headings += 1
                continue
            for sentence in split_sentences(paragraph):
                if MARKUP.search(sentence):
                    self.counts.markup += 1
                else:
                    sentences.append(sentence)
        if not sentences:
            self.counts.empty_documents += 1
            return None
        self.counts.documents += 1
        self.counts.sentences += len(sentences)
        return Document(title, sentences)

    def wikiextractor(self, path: Path) -> Iterator[Document]:
        """Documents of a WikiExtractor file: `<doc ... title="T">`, the title line, then one
        paragraph per line, `</doc>`."""
        self.counts.files.append(str(path))
        title, paragraphs = None, []
        for number, line in enumerate(read_lines(path), start=1):
            opened = _DOC_OPEN.match(line)
            if opened:
                if title is not None:
                    raise UserError(f"{path}:{number}: <doc> opens inside an unclosed <doc>")
                title, paragraphs = opened.group(1), []
            elif line == "</doc>":
                if title is None:
                    raise UserError(f"{path}:{number}: </doc> without an opening <doc>")
                if paragraphs and paragraphs[0] == title:  # the extractor repeats the title
                    paragraphs = paragraphs[1:]
                document = self.document(title, paragraphs)
                if document is not None:
                    yield document
                title = None
            elif title is None:
                if line:
                    raise UserError(
                        f"{path}:{number}: text outside <doc>...</doc>; is this a WikiExtractor file?"
                    )
            elif line:
                paragraphs.append(line)
        if title is not None:
            raise UserError(f"{path}: ends inside <doc title={title!r}> (truncated file?)")

    def plain_text(self, path: Path) -> Iterator[Document]:
        """Documents of a plain text file: blank lines separate documents, each line is a
        paragraph (so the original BERT format, one sentence per line, reads as it is)."""
        self.counts.files.append(str(path))
        paragraphs: list[str] = []
        for line in [*read_lines(path), ""]:
            if line:
                paragraphs.append(line)
            elif paragraphs:
                document = self.document("", paragraphs)
                if document is not None:
                    yield document
                paragraphs = []

    def wikitext(self, path: Path) -> Iterator[Document]:
        """Articles of a WikiText file (` = Title = ` starts one; headings are dropped and
        counted; ` @-@ `-style joins undone; `<unk>` becomes `[UNK]`)."""
        self.counts.files.append(str(path))
        title, paragraphs = None, []
        for line in [*read_lines(path), "= <end> ="]:  # a last title closes the last article
            if _WIKITEXT_TITLE.match(line):
                if title is not None:
                    document = self.document(title, paragraphs)
                    if document is not None:
                        yield document
                title, paragraphs = line.strip("= "), []
            elif _WIKITEXT_HEADING.match(line):
                self.counts.headings += 1
            elif line:
                paragraphs.append(_WIKITEXT_JOIN.sub(r"\1", line).replace("<unk>", "[UNK]"))


def wiki_files(folder: Path) -> list[Path]:
    """The WikiExtractor files of a folder (`wiki_NN`, as the extractor names them), sorted."""
    files = sorted(p for p in folder.glob("wiki_*") if p.is_file())
    if not files:
        raise UserError(f"no WikiExtractor files (wiki_NN) in {folder}")
    return files


FORMATS = {
    "wikiextractor": DocumentReader.wikiextractor,
    "text": DocumentReader.plain_text,
    "wikitext": DocumentReader.wikitext,
}


def read_documents(
    paths: Iterable[Path], fmt: str, *, min_paragraph_words: int = 8
) -> tuple[list[Document], DocumentCounts]:
    """All documents of `paths` in format `fmt` (wikiextractor | text | wikitext) and the counts.

    Args:
        min_paragraph_words: WikiExtractor only: shorter paragraph lines are headings.
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown document format {fmt!r}; choose from {sorted(FORMATS)}")
    reader = DocumentReader(min_paragraph_words=min_paragraph_words if fmt == "wikiextractor" else 0)
    documents = [doc for path in paths for doc in FORMATS[fmt](reader, Path(path))]
    return documents, reader.counts
