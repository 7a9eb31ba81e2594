"""A built-in, seeded corpus on which a tiny BERT learns both objectives, and a tiny GPT
learns to continue a document, in minutes on a CPU (the recipes that need no files use it).

Each document describes one invented entity of one of six kinds (a town, a ship, a composer, a
bird, a mountain, a company) by following its kind's script: the sentences come in the script's
order, a few of them left out, and every sentence names the entity or one of its attributes.
That makes both objectives learnable and their success measurable:
- next-sentence prediction: a true continuation stays with the same kind, the same entity and
  the script's order; a random B almost always switches kind (5 times in 6) or entity.
- masked words: script words follow from their template, and an attribute (a river, a crop, a
  captain) drawn once per document recurs, so a masked mention can be copied from another.
Names are made of syllables, so WordPiece splits most of them into pieces.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from zoo.data.documents import Document

SYLLABLES = (
    "ka",
    "lo",
    "mir",
    "ten",
    "va",
    "dor",
    "si",
    "bel",
    "run",
    "tho",
    "ga",
    "nes",
    "pra",
    "wil",
    "zo",
    "mek",
    "ari",
    "fen",
    "lu",
    "cor",
)
MONTHS = ("january", "march", "april", "june", "august", "october", "december")
COLOURS = ("red", "green", "grey", "blue", "white", "black", "yellow")


@dataclass(frozen=True)
class Kind:
    """One kind of entity: its attribute values and its script of sentence templates."""

    slots: dict[str, tuple[str, ...]]
    script: tuple[str, ...]


KINDS = {
    "town": Kind(
        slots={
            "region": ("northern", "southern", "eastern", "western", "central"),
            "crop": ("wheat", "barley", "apples", "grapes", "olives", "potatoes"),
            "craft": ("pottery", "weaving", "glass", "leather", "silver"),
        },
        script=(
            "{name} is a small town in the {region} valley .",
            "the town lies on the banks of the river {other} .",
            "{name} was founded by {person} in the year {year} .",
            "most families in {name} grow {crop} in the fields around the town .",
            "the old market of {name} is known for its {craft} .",
            "every {month} the town holds a festival of {crop} .",
            "the river {other} floods the fields of {name} each spring .",
            "today about {number} people live in {name} .",
        ),
    ),
    "ship": Kind(
        slots={
            "cargo": ("coal", "timber", "grain", "wool", "tea", "salt"),
            "port": ("harbour", "bay", "estuary", "cove"),
            "fate": ("sank in a storm", "was broken up", "ran aground", "became a museum"),
        },
        script=(
            "the {name} was a {colour} cargo ship built in {year} .",
            "she was commanded by captain {person} for most of her service .",
            "the ship carried {cargo} from the {port} of {other} to distant markets .",
            "captain {person} sailed the {name} through many storms .",
            "in {month} of one hard winter the {name} lost her main mast .",
            "her crew of {number} sailors loaded {cargo} at every stop .",
            "after long service the {name} {fate} .",
        ),
    ),
    "composer": Kind(
        slots={
            "instrument": ("violin", "piano", "cello", "flute", "organ", "harp"),
            "form": ("symphonies", "sonatas", "operas", "songs", "quartets"),
        },
        script=(
            "{name} was a composer born in the city of {other} in {year} .",
            "as a child {name} learned to play the {instrument} from a teacher .",
            "{name} wrote {number} {form} during a long career .",
            "the {form} of {name} were first played in {other} .",
            "critics praised the way {name} wrote for the {instrument} .",
            "in {month} the city of {other} still holds a concert of music by {name} .",
            "{name} died in {other} at the age of {age} .",
        ),
    ),
    "bird": Kind(
        slots={
            "food": ("seeds", "insects", "berries", "fish", "worms"),
            "home": ("forests", "marshes", "cliffs", "meadows", "reeds"),
            "song": ("a sharp whistle", "a low hoot", "a long trill", "a soft chirp"),
        },
        script=(
            "the {name} is a small {colour} bird of the {home} .",
            "it feeds mostly on {food} and sometimes on {food2} .",
            "the {name} builds its nest in {home} close to water .",
            "the female lays {number} eggs in early {month} .",
            "its call is {song} that can be heard at dawn .",
            "in winter the {name} flies south to the coast of {other} .",
            "the {name} is common in {home} but rare in towns .",
        ),
    ),
    "mountain": Kind(
        slots={
            "rock": ("granite", "limestone", "basalt", "sandstone", "slate"),
            "range": ("northern", "southern", "eastern", "western", "central"),
        },
        script=(
            "mount {name} is a peak in the {range} range .",
            "it rises {number} metres above the plain of {other} .",
            "the mountain is made mostly of {rock} .",
            "mount {name} was first climbed by {person} in {year} .",
            "{person} reached the summit of mount {name} in {month} .",
            "snow covers the {rock} slopes of mount {name} for most of the year .",
            "a path from the village of {other} leads to the top of mount {name} .",
        ),
    ),
    "company": Kind(
        slots={
            "product": ("bicycles", "lamps", "clocks", "shoes", "radios", "paper"),
            "city": ("harbour city", "capital", "old town", "river city"),
        },
        script=(
            "{name} is a company that makes {product} .",
            "it was started by {person} in a small workshop in {year} .",
            "the first {product} of {name} were sold in the {city} of {other} .",
            "{person} led {name} for {age} years .",
            "by {year2} {name} had {number} workers and three factories .",
            "the {product} made by {name} are known for their {colour} colour .",
            "today {name} sells its {product} in many countries .",
        ),
    ),
}


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def synthetic_document(rng: random.Random) -> Document:
    """One document: a kind, an entity with its attributes, and most of the kind's script."""
    kind_name = rng.choice(sorted(KINDS))
    kind = KINDS[kind_name]
    values = {slot: rng.choice(options) for slot, options in kind.slots.items()}
    values.update(
        {
            f"{slot}2": rng.choice([o for o in options if o != values[slot]])
            for slot, options in kind.slots.items()
        }
    )
    values.update(
        name=_name(rng),
        person=_name(rng),
        other=_name(rng),
        month=rng.choice(MONTHS),
        colour=rng.choice(COLOURS),
        year=str(rng.randint(1700, 1950)),
        year2=str(rng.randint(1951, 2000)),
        number=str(rng.randint(2, 90) * 10),
        age=str(rng.randint(20, 90)),
    )
    # Drop one or two sentences, so order is a cue but not a fixed sequence of identical texts.
    dropped = set(rng.sample(range(len(kind.script)), rng.randint(1, 2)))
    sentences = [t.format(**values) for i, t in enumerate(kind.script) if i not in dropped]
    return Document(f"{kind_name} {values['name']}", sentences)


def synthetic_documents(count: int, seed: int) -> list[Document]:
    """`count` documents, the same for the same seed."""
    rng = random.Random(seed)
    return [synthetic_document(rng) for _ in range(count)]
