"""The built-in sets: labelled data made from zoo.data.corpus's seeded documents, so that every
head trains offline with no files (`python -m zoo train bert_finetune [--head=tag|span]`).

Every sentence of a built-in document is one of its kind's script templates with the slots
filled; matching it back against the templates (TEMPLATES, anchored, each slot limited to the
values it can take) recovers where each slot's value sits, without a second copy of the
generator. From that:
- classify: a sentence -> the kind of entity it describes (town, ship, composer, bird,
  mountain, company): six labels, read from the template's words.
- tag: a sentence's words -> B-/I-/O tags of its names and dates: the entity (ENT), a person
  (PER), a place (LOC), a year or month (DATE); a title word before a name ("mount", "captain",
  "river") belongs to its chunk. Names are invented syllables: the type comes from the context.
- span: a document as the passage, and questions whose answers are its attributes
  (QUESTIONS), asked only when a kept sentence holds the answer.
"""

from __future__ import annotations

import re
import string
from functools import cache

from tasks.bert.finetune.readers import Example, SquadExample, TaggedSentence
from zoo.data.corpus import COLOURS, KINDS, MONTHS, synthetic_documents
from zoo.data.documents import Document

SPLITS = ("train", "valid", "test")
NAMES = r"[a-z]+"  # invented names: syllables, lowercase
NUMBERS = r"\d+"
TAG_TYPES = {"name": "ENT", "person": "PER", "other": "LOC", "year": "DATE", "year2": "DATE", "month": "DATE"}
TITLES = frozenset({"mount", "captain", "river"})
QUESTIONS = {
    "town": [("on which river does {name} lie ?", "other"), ("who founded {name} ?", "person"),
             ("in which year was {name} founded ?", "year"), ("what do families in {name} grow ?", "crop"),
             ("what is the market of {name} known for ?", "craft"),
             ("how many people live in {name} ?", "number")],
    "ship": [("what colour was the {name} ?", "colour"), ("who commanded the {name} ?", "person"),
             ("what did the {name} carry ?", "cargo"), ("when was the {name} built ?", "year"),
             ("what became of the {name} ?", "fate")],
    "composer": [("where was {name} born ?", "other"), ("when was {name} born ?", "year"),
                 ("which instrument did {name} learn ?", "instrument"), ("what did {name} write ?", "form"),
                 ("how old was {name} at death ?", "age")],
    "bird": [("what colour is the {name} ?", "colour"), ("what does the {name} feed on ?", "food"),
             ("how many eggs does the {name} lay ?", "number"), ("what is the call of the {name} ?", "song")],
    "mountain": [("in which range is mount {name} ?", "range"), ("how high is mount {name} ?", "number"),
                 ("what is mount {name} made of ?", "rock"), ("who first climbed mount {name} ?", "person")],
    "company": [("what does {name} make ?", "product"), ("who started {name} ?", "person"),
                ("how many workers did {name} have ?", "number"), ("when was {name} started ?", "year")],
}  # fmt: skip
Mentions = dict[str, tuple[int, int]]  # slot -> (start, end) characters of its first value


def _slot_pattern(kind: str, slot: str) -> str:
    options = KINDS[kind].slots.get(slot.removesuffix("2"))
    if options is not None:
        return "|".join(re.escape(o) for o in options)
    if slot in ("name", "person", "other"):
        return NAMES
    return {"month": "|".join(MONTHS), "colour": "|".join(COLOURS)}.get(slot, NUMBERS)


def _compile(kind: str, template: str) -> re.Pattern[str]:
    """The template as an anchored pattern, a named group per slot (a repeated slot must repeat
    its value)."""
    pattern, seen = "", set()
    for literal, slot, _, _ in string.Formatter().parse(template):
        pattern += re.escape(literal)
        if slot is not None:
            pattern += f"(?P={slot})" if slot in seen else f"(?P<{slot}>{_slot_pattern(kind, slot)})"
            seen.add(slot)
    return re.compile(pattern)


@cache
def templates(kind: str) -> tuple[re.Pattern[str], ...]:
    return tuple(_compile(kind, template) for template in KINDS[kind].script)


def mentions(kind: str, sentence: str) -> Mentions:
    """Where each slot's value sits in a sentence of a `kind` document."""
    for pattern in templates(kind):
        match = pattern.fullmatch(sentence)
        if match:
            return {slot: match.span(slot) for slot in match.groupdict()}
    raise ValueError(f"not a sentence of the {kind} script: {sentence!r}")


def documents(sizes: list[int], seed: int, split: str) -> list[Document]:
    """The split's documents: one seeded stream cut into train, valid and test."""
    train, valid, test = sizes
    every = synthetic_documents(train + valid + test, seed)
    bounds = {
        "train": (0, train),
        "valid": (train, train + valid),
        "test": (train + valid, train + valid + test),
    }
    start, end = bounds[split]
    return every[start:end]


def kind_of(document: Document) -> str:
    return document.title.split()[0]


def classify_set(docs: list[Document]) -> list[Example]:
    """Every sentence, labelled with its document's kind."""
    return [Example((sentence,), kind_of(doc)) for doc in docs for sentence in doc.sentences]


def tag_set(docs: list[Document]) -> list[TaggedSentence]:
    """Every sentence as words with B-/I-/O tags of its names and dates."""
    return [_tagged(kind_of(doc), sentence) for doc in docs for sentence in doc.sentences]


def _tagged(kind: str, sentence: str) -> TaggedSentence:
    words = sentence.split(" ")
    starts = [sum(len(w) + 1 for w in words[:i]) for i in range(len(words))]
    tags = ["O"] * len(words)
    for slot, (start, end) in mentions(kind, sentence).items():
        if slot not in TAG_TYPES:
            continue
        first = starts.index(start)
        last = first + sentence[start:end].count(" ")
        first -= first > 0 and words[first - 1] in TITLES
        tags[first : last + 1] = [f"B-{TAG_TYPES[slot]}"] + [f"I-{TAG_TYPES[slot]}"] * (last - first)
    return TaggedSentence(tuple(words), tuple(tags))


def span_set(docs: list[Document], split: str) -> list[SquadExample]:
    """Per document, its passage (the sentences joined by spaces) and QUESTIONS whose answer a
    kept sentence holds, the answer at its first mention."""
    examples = []
    for number, doc in enumerate(docs):
        kind, name = doc.title.split(" ", 1)
        context, found = "", {}
        for sentence in doc.sentences:
            offset = len(context) + bool(context)
            context += (" " if context else "") + sentence
            for slot, (start, end) in mentions(kind, sentence).items():
                found.setdefault(slot, (offset + start, offset + end))
        for question, slot in QUESTIONS[kind]:
            if slot in found:
                start, end = found[slot]
                qid = f"{split}-{number}-{slot}"
                answer = ((context[start:end], start),)
                examples.append(SquadExample(qid, doc.title, context, question.format(name=name), answer))
    return examples


def builtin_labels(head: str) -> list[str]:
    """Every label the head's built-in set can hold, sorted (however few documents are drawn)."""
    if head == "classify":
        return sorted(KINDS)
    if head == "tag":
        return sorted({"O", *(f"{bio}-{kind}" for kind in TAG_TYPES.values() for bio in "BI")})
    return []


def builtin_set(head: str, sizes: list[int], seed: int, split: str) -> list:
    """The built-in examples of `head` for `split` (train, valid or test)."""
    docs = documents(sizes, seed, split)
    if head == "classify":
        return classify_set(docs)
    if head == "tag":
        return tag_set(docs)
    return span_set(docs, split)
