"""The built-in corpus: a seeded, synthetic English -> German-like translation task.

It needs no download and a small model learns it on a laptop CPU in minutes, yet it cannot be
solved by copying or reversing: the German side is the correct translation under real German
rules that make a model look far from the word it is writing.

- Agreement: articles and adjective endings follow the noun's gender (a German property the
  English word does not show), number and case: "the big dog" is "der große Hund" as subject and
  "den großen Hund" as object; "a small child" is "ein kleines Kind"; "with the old cows" is
  "mit den alten Kühen" (dative plural -n); weak nouns take -en ("den Studenten").
- Verb second: a fronted time phrase pushes the finite verb before the subject
  ("Today the dog sees the cat" -> "Heute sieht der Hund die Katze").
- Verb final: after "dass" (that) and "weil" (because) the finite verb goes to the end of the
  clause, after the object and any phrases ("..., weil der Hund die Katze sieht").
- Tense: the English simple past becomes the German perfect, an auxiliary chosen by the verb
  (haben or sein) in second position and the participle at the end of the clause
  ("the dog saw the cat yesterday" -> "der Hund hat gestern die Katze gesehen").
- Word order in the middle field: time phrases come before the object in German and after it in
  English; one English verb may need two German words far apart, "looks for" one.
- Lexical choice by context: "knows" + object is "kennt", "knows that" is "weiß, dass".

The English side is deterministic given the structure and never ambiguous, so every English
sentence has exactly one German translation. The lexicon has 40 names, 101 nouns, 40 adjectives,
55 verbs, 10 manner adverbs and 20 time phrases: 400 to 600 English word forms in all (see
`english_vocabulary`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# --- lexicon --------------------------------------------------------------------------------

# gender, English singular and plural, German singular and plural, [weak-noun oblique singular]
_NOUNS = """
m dog dogs Hund Hunde
m man men Mann Männer
m teacher teachers Lehrer Lehrer
m doctor doctors Arzt Ärzte
m friend friends Freund Freunde
m king kings König Könige
m baker bakers Bäcker Bäcker
m cook cooks Koch Köche
m brother brothers Bruder Brüder
m father fathers Vater Väter
m bird birds Vogel Vögel
m tree trees Baum Bäume
m table tables Tisch Tische
m chair chairs Stuhl Stühle
m apple apples Apfel Äpfel
m ball balls Ball Bälle
m hat hats Hut Hüte
m coat coats Mantel Mäntel
m key keys Schlüssel Schlüssel
m letter letters Brief Briefe
m garden gardens Garten Gärten
m cake cakes Kuchen Kuchen
m spoon spoons Löffel Löffel
m shoe shoes Schuh Schuhe
m train trains Zug Züge
m wolf wolves Wolf Wölfe
m plate plates Teller Teller
m student students Student Studenten Studenten
m neighbor neighbors Nachbar Nachbarn Nachbarn
m farmer farmers Bauer Bauern Bauern
m boy boys Junge Jungen Jungen
m lion lions Löwe Löwen Löwen
m bear bears Bär Bären Bären
m monkey monkeys Affe Affen Affen
m elephant elephants Elefant Elefanten Elefanten
m prince princes Prinz Prinzen Prinzen
f cat cats Katze Katzen
f woman women Frau Frauen
f mother mothers Mutter Mütter
f sister sisters Schwester Schwestern
f city cities Stadt Städte
f flower flowers Blume Blumen
f door doors Tür Türen
f lamp lamps Lampe Lampen
f bottle bottles Flasche Flaschen
f cup cups Tasse Tassen
f school schools Schule Schulen
f street streets Straße Straßen
f mouse mice Maus Mäuse
f cow cows Kuh Kühe
f duck ducks Ente Enten
f queen queens Königin Königinnen
f bag bags Tasche Taschen
f clock clocks Uhr Uhren
f banana bananas Banane Bananen
f pear pears Birne Birnen
f soup soups Suppe Suppen
f box boxes Kiste Kisten
f map maps Karte Karten
f jacket jackets Jacke Jacken
f owl owls Eule Eulen
f bee bees Biene Bienen
f rose roses Rose Rosen
f grandmother grandmothers Großmutter Großmütter
f wall walls Wand Wände
f bridge bridges Brücke Brücken
f island islands Insel Inseln
f church churches Kirche Kirchen
f newspaper newspapers Zeitung Zeitungen
f teapot teapots Teekanne Teekannen
f kitchen kitchens Küche Küchen
n child children Kind Kinder
n girl girls Mädchen Mädchen
n horse horses Pferd Pferde
n house houses Haus Häuser
n book books Buch Bücher
n car cars Auto Autos
n picture pictures Bild Bilder
n window windows Fenster Fenster
n bread breads Brot Brote
n egg eggs Ei Eier
n glass glasses Glas Gläser
n song songs Lied Lieder
n dress dresses Kleid Kleider
n shirt shirts Hemd Hemden
n bed beds Bett Betten
n boat boats Boot Boote
n village villages Dorf Dörfer
n pig pigs Schwein Schweine
n lamb lambs Lamm Lämmer
n baby babies Baby Babys
n bicycle bicycles Fahrrad Fahrräder
n gift gifts Geschenk Geschenke
n game games Spiel Spiele
n chicken chickens Huhn Hühner
n knife knives Messer Messer
n phone phones Telefon Telefone
n animal animals Tier Tiere
n rabbit rabbits Kaninchen Kaninchen
n piano pianos Klavier Klaviere
n camel camels Kamel Kamele
"""

_ADJECTIVES = """
big groß|small klein|old alt|young jung|new neu|good gut|bad schlecht|happy glücklich|sad traurig
red rot|blue blau|green grün|black schwarz|white weiß|yellow gelb|brown braun|beautiful schön
ugly hässlich|tired müde|hungry hungrig|clever klug|friendly freundlich|quiet ruhig|loud laut
rich reich|poor arm|strong stark|weak schwach|warm warm|cold kalt|clean sauber|dirty schmutzig
wild wild|funny lustig|lazy faul|brave mutig|famous berühmt|strange seltsam|heavy schwer|round rund
"""

# English 3sg, base, past | German 3sg, 3pl, participle, auxiliary (h = haben, s = sein)
_TRANSITIVE = """
sees see saw | sieht sehen gesehen h
finds find found | findet finden gefunden h
likes like liked | mag mögen gemocht h
loves love loved | liebt lieben geliebt h
hears hear heard | hört hören gehört h
needs need needed | braucht brauchen gebraucht h
buys buy bought | kauft kaufen gekauft h
sells sell sold | verkauft verkaufen verkauft h
paints paint painted | malt malen gemalt h
carries carry carried | trägt tragen getragen h
visits visit visited | besucht besuchen besucht h
washes wash washed | wäscht waschen gewaschen h
catches catch caught | fängt fangen gefangen h
feeds feed fed | füttert füttern gefüttert h
draws draw drew | zeichnet zeichnen gezeichnet h
builds build built | baut bauen gebaut h
brings bring brought | bringt bringen gebracht h
takes take took | nimmt nehmen genommen h
holds hold held | hält halten gehalten h
opens open opened | öffnet öffnen geöffnet h
kisses kiss kissed | küsst küssen geküsst h
meets meet met | trifft treffen getroffen h
knows know knew | kennt kennen gekannt h
calls call called | ruft rufen gerufen h
looks_for look_for looked_for | sucht suchen gesucht h
eats eat ate | isst essen gegessen h
drinks drink drank | trinkt trinken getrunken h
writes write wrote | schreibt schreiben geschrieben h
throws throw threw | wirft werfen geworfen h
forgets forget forgot | vergisst vergessen vergessen h
asks ask asked | fragt fragen gefragt h
teaches teach taught | unterrichtet unterrichten unterrichtet h
pulls pull pulled | zieht ziehen gezogen h
pushes push pushed | schiebt schieben geschoben h
"""

_INTRANSITIVE = """
sleeps sleep slept | schläft schlafen geschlafen h
laughs laugh laughed | lacht lachen gelacht h
sings sing sang | singt singen gesungen h
dances dance danced | tanzt tanzen getanzt h
plays play played | spielt spielen gespielt h
works work worked | arbeitet arbeiten gearbeitet h
waits wait waited | wartet warten gewartet h
cries cry cried | weint weinen geweint h
smiles smile smiled | lächelt lächeln gelächelt h
swims swim swam | schwimmt schwimmen geschwommen s
runs run ran | läuft laufen gelaufen s
comes come came | kommt kommen gekommen s
goes go went | geht gehen gegangen s
falls fall fell | fällt fallen gefallen s
jumps jump jumped | springt springen gesprungen s
travels travel traveled | reist reisen gereist s
"""

# Verbs that take a "that" clause ("knows that" is "weiß, dass", unlike "knows the dog").
_THAT_VERBS = """
says say said | sagt sagen gesagt h
thinks think thought | denkt denken gedacht h
knows know knew | weiß wissen gewusst h
believes believe believed | glaubt glauben geglaubt h
hopes hope hoped | hofft hoffen gehofft h
"""

# English | German | tense it fits: present, past or any
_TIMES = """
today|heute|present
now|jetzt|present
yesterday|gestern|past
last week|letzte Woche|past
last year|letztes Jahr|past
often|oft|any
always|immer|any
rarely|selten|any
sometimes|manchmal|any
usually|meistens|any
in the morning|am Morgen|any
in the evening|am Abend|any
at night|nachts|any
on Monday|am Montag|any
on Tuesday|am Dienstag|any
on Wednesday|am Mittwoch|any
on Thursday|am Donnerstag|any
on Friday|am Freitag|any
on Saturday|am Samstag|any
on Sunday|am Sonntag|any
"""

_MANNERS = """
quickly schnell|slowly langsam|quietly leise|loudly laut|happily fröhlich|carefully vorsichtig
secretly heimlich|together zusammen|alone allein|well gut
"""

_NAMES = """
Anna Peter Maria Thomas Lisa Paul Julia Max Sophie Felix Emma Lukas Clara Jonas Lena David Sarah
Tim Laura Ben Mia Leon Hannah Noah Lea Elias Marie Finn Nora Karl Greta Otto Ida Hans Rosa
Jakob Frieda Moritz Ella Oskar
"""

# English preposition -> German preposition and the case it governs.
PREPOSITIONS = {"with": ("mit", "dat"), "for": ("für", "acc"), "without": ("ohne", "acc")}

# English determiner -> German determiner stem; None is the definite article.
DETERMINERS = {
    "the": None,
    "a": "ein",
    "no": "kein",
    "my": "mein",
    "his": "sein",
    "her": "ihr",
    "our": "unser",
}
PLURAL_DETERMINERS = ("the", "no", "my", "his", "her", "our", "")  # "" = bare plural: "dogs"

_DEFINITE = {
    "nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
    "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
    "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "den"},
}
_EIN_ENDINGS = {
    "nom": {"m": "", "f": "e", "n": "", "pl": "e"},
    "acc": {"m": "en", "f": "e", "n": "", "pl": "e"},
    "dat": {"m": "em", "f": "er", "n": "em", "pl": "en"},
}
# Adjective endings after the definite article (weak), after ein-words (mixed), and with no
# determiner (strong; only plurals go without one here).
_WEAK = {
    "nom": {"m": "e", "f": "e", "n": "e", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "e", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
_MIXED = {
    "nom": {"m": "er", "f": "e", "n": "es", "pl": "en"},
    "acc": {"m": "en", "f": "e", "n": "es", "pl": "en"},
    "dat": {"m": "en", "f": "en", "n": "en", "pl": "en"},
}
_STRONG_PLURAL = {"nom": "e", "acc": "e", "dat": "en"}


@dataclass(frozen=True)
class Noun:
    gender: str
    en: str
    en_plural: str
    de: str
    de_plural: str
    de_oblique: str  # singular accusative/dative: differs from `de` only for weak nouns

    def german(self, case: str, plural: bool) -> str:
        if not plural:
            return self.de if case == "nom" else self.de_oblique
        if case == "dat" and not self.de_plural.endswith(("n", "s")):
            return self.de_plural + "n"
        return self.de_plural


@dataclass(frozen=True)
class Verb:
    en_3sg: str
    en_base: str
    en_past: str
    de_3sg: str
    de_3pl: str
    de_participle: str
    auxiliary: str  # "h" (haben) or "s" (sein)


@dataclass(frozen=True)
class Time:
    en: str
    de: str
    tense: str  # "present", "past" or "any"


def _nouns() -> dict[str, Noun]:
    nouns = {}
    for line in _NOUNS.strip().splitlines():
        gender, en, en_plural, de, de_plural, *oblique = line.split()
        nouns[en] = Noun(gender, en, en_plural, de, de_plural, oblique[0] if oblique else de)
    return nouns


def _word_pairs(table: str) -> dict[str, str]:
    return dict(item.split(" ", 1) for item in table.replace("\n", "|").strip("|").split("|"))


def _verbs(table: str) -> dict[str, Verb]:
    verbs = {}
    for line in table.strip().splitlines():
        english, german = line.split(" | ")
        verb = Verb(*(w.replace("_", " ") for w in english.split()), *german.split())
        verbs[verb.en_3sg] = verb
    return verbs


NOUNS = _nouns()
ADJECTIVES = _word_pairs(_ADJECTIVES)
MANNERS = _word_pairs(_MANNERS)
TRANSITIVE = _verbs(_TRANSITIVE)
INTRANSITIVE = _verbs(_INTRANSITIVE)
THAT_VERBS = _verbs(_THAT_VERBS)
TIMES = {
    en: Time(en, de, tense) for en, de, tense in (line.split("|") for line in _TIMES.strip().splitlines())
}
NAMES = _NAMES.split()

# --- sentence structure and its two renderings ------------------------------------------------


@dataclass(frozen=True)
class Phrase:
    """A noun phrase: a name, or determiner + optional adjective + noun."""

    noun: Noun | None = None
    name: str | None = None
    determiner: str = "the"  # an English determiner; "" = bare plural
    adjective: str | None = None  # English
    plural: bool = False

    def english(self) -> list[str]:
        if self.name:
            return [self.name]
        words = ([self.adjective] if self.adjective else []) + [
            self.noun.en_plural if self.plural else self.noun.en
        ]
        determiner = self.determiner
        if determiner == "a" and words[0][0] in "aeiou":
            determiner = "an"
        return ([determiner] if determiner else []) + words

    def german(self, case: str) -> list[str]:
        if self.name:
            return [self.name]
        key = "pl" if self.plural else self.noun.gender
        if self.determiner == "the":
            words, ending = [_DEFINITE[case][key]], _WEAK[case][key]
        elif self.determiner:
            words, ending = [DETERMINERS[self.determiner] + _EIN_ENDINGS[case][key]], _MIXED[case][key]
        else:
            words, ending = [], _STRONG_PLURAL[case]
        if self.adjective:
            words.append(ADJECTIVES[self.adjective] + ending)
        return words + [self.noun.german(case, self.plural)]


@dataclass(frozen=True)
class Clause:
    """Subject, verb and the optional object, prepositional phrase, manner and time phrases."""

    subject: Phrase
    verb: Verb
    obj: Phrase | None = None
    prep: tuple[str, Phrase] | None = None  # (English preposition, its object)
    manner: str | None = None  # English
    time: Time | None = None
    past: bool = False
    fronted: bool = False  # the time phrase opens the sentence (main clauses only)

    def english(self) -> list[str]:
        if self.past:
            verb = self.verb.en_past
        else:
            verb = self.verb.en_base if self.subject.plural else self.verb.en_3sg
        rest = (
            (self.obj.english() if self.obj else [])
            + ([self.prep[0], *self.prep[1].english()] if self.prep else [])
            + ([self.manner] if self.manner else [])
        )
        time = [self.time.en] if self.time else []
        if self.fronted:
            return time + self.subject.english() + [verb] + rest
        return self.subject.english() + [verb] + rest + time

    def _german_parts(self) -> tuple[str, list[str], list[str]]:
        """(finite verb, middle field, participle if any): the pieces German orders by clause."""
        plural = self.subject.plural
        if self.past:
            auxiliary = {"h": ("hat", "haben"), "s": ("ist", "sind")}[self.verb.auxiliary]
            finite, final = auxiliary[plural], [self.verb.de_participle]
        else:
            finite, final = self.verb.de_3pl if plural else self.verb.de_3sg, []
        middle = (
            ([self.time.de] if self.time and not self.fronted else [])
            + (self.obj.german("acc") if self.obj else [])
            + ([MANNERS[self.manner]] if self.manner else [])
        )
        if self.prep:
            preposition, case = PREPOSITIONS[self.prep[0]]
            middle += [preposition, *self.prep[1].german(case)]
        return finite, middle, final

    def german_main(self) -> list[str]:
        """Verb second: subject or fronted time phrase, finite verb, ..., participle."""
        finite, middle, final = self._german_parts()
        subject = self.subject.german("nom")
        if self.fronted:
            return [self.time.de, finite] + subject + middle + final
        return subject + [finite] + middle + final

    def german_subordinate(self) -> list[str]:
        """Verb final: subject, ..., participle, finite verb."""
        finite, middle, final = self._german_parts()
        return self.subject.german("nom") + middle + final + [finite]


CONJUNCTIONS = {"because": "weil", "that": "dass"}


@dataclass(frozen=True)
class Sentence:
    """A main clause, optionally joined to a subordinate clause by "because" or "that"."""

    main: Clause
    conjunction: str = ""  # "", "because" or "that" (the main verb then takes a that-clause)
    sub: Clause | None = None

    def english(self) -> str:
        words = self.main.english()
        if self.sub:
            words += [self.conjunction] + self.sub.english()
        return _finish(words)

    def german(self) -> str:
        words = self.main.german_main()
        if self.sub:
            words[-1] += ","
            words += [CONJUNCTIONS[self.conjunction]] + self.sub.german_subordinate()
        return _finish(words)


def _finish(words: list[str]) -> str:
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


# --- random sentences -------------------------------------------------------------------------


class _Sampler:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.nouns = list(NOUNS.values())
        self.adjectives = list(ADJECTIVES)
        self.manners = list(MANNERS)
        self.times = {
            past: [t for t in TIMES.values() if t.tense in ("any", "past" if past else "present")]
            for past in (False, True)
        }

    def phrase(self) -> Phrase:
        rng = self.rng
        if rng.random() < 0.15:
            return Phrase(name=rng.choice(NAMES))
        plural = rng.random() < 0.3
        return Phrase(
            noun=rng.choice(self.nouns),
            plural=plural,
            determiner=rng.choice(PLURAL_DETERMINERS if plural else list(DETERMINERS)),
            adjective=rng.choice(self.adjectives) if rng.random() < 0.35 else None,
        )

    def clause(self, verbs: list[Verb], *, main: bool, bare: bool = False) -> Clause:
        """A random clause; `bare` (for that-verbs) allows only subject, verb and time."""
        rng = self.rng
        past = rng.random() < 0.4
        verb = rng.choice(verbs)
        time = rng.choice(self.times[past]) if rng.random() < 0.4 else None
        return Clause(
            subject=self.phrase(),
            verb=verb,
            past=past,
            time=time,
            obj=self.phrase() if verb.en_3sg in TRANSITIVE and not bare else None,
            prep=(rng.choice(list(PREPOSITIONS)), self.phrase())
            if not bare and rng.random() < 0.25
            else None,
            manner=rng.choice(self.manners) if not bare and rng.random() < 0.2 else None,
            fronted=main and time is not None and rng.random() < 0.5,
        )

    def verbs(self) -> list[Verb]:
        return list((TRANSITIVE if self.rng.random() < 0.7 else INTRANSITIVE).values())

    def sentence(self) -> Sentence:
        kind = self.rng.random()
        if kind < 0.45:
            return Sentence(self.clause(self.verbs(), main=True))
        if kind < 0.7:
            return Sentence(
                self.clause(self.verbs(), main=True), "because", self.clause(self.verbs(), main=False)
            )
        return Sentence(
            self.clause(list(THAT_VERBS.values()), main=True, bare=True),
            "that",
            self.clause(self.verbs(), main=False),
        )


def generate(n: int, seed: int) -> list[tuple[str, str]]:
    """`n` distinct (English, German) pairs, a deterministic function of `seed`."""
    sampler, seen, pairs = _Sampler(seed), set(), []
    while len(pairs) < n:
        sentence = sampler.sentence()
        english = sentence.english()
        if english not in seen:
            seen.add(english)
            pairs.append((english, sentence.german()))
    return pairs


TRAIN_SIZE, VALID_SIZE, TEST_SIZE = 20_000, 500, 500


def splits(
    seed: int, *, train: int = TRAIN_SIZE, valid: int = VALID_SIZE, test: int = TEST_SIZE
) -> tuple[list[tuple[str, str]], ...]:
    """(train, valid, test) pair lists; no English sentence appears in two of them."""
    pairs = generate(train + valid + test, seed)
    return pairs[:train], pairs[train : train + valid], pairs[train + valid :]


def english_vocabulary() -> set[str]:
    """Every English word form the lexicon can produce (lowercase)."""
    words = {"a", "an", *DETERMINERS, *PREPOSITIONS, *CONJUNCTIONS, *ADJECTIVES, *MANNERS}
    words |= {name.lower() for name in NAMES}
    words |= {w for noun in NOUNS.values() for w in (noun.en, noun.en_plural)}
    for verb in (*TRANSITIVE.values(), *INTRANSITIVE.values(), *THAT_VERBS.values()):
        words |= {w for form in (verb.en_3sg, verb.en_base, verb.en_past) for w in form.split()}
    words |= {w.lower() for time in TIMES for w in time.split()}
    return words
