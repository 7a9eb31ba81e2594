"""A built-in, seeded treebank from a small English grammar, so the parser trains offline.

It needs real structure, not a fixed template:
- prepositional phrase attachment decided by the words, as a human reader decides it: `with`
  plus an instrument (telescope, fork) modifies the verb, `with` plus an accessory (hat, scarf)
  modifies the noun; `in`/`at` plus a place modify the verb, `from`/`of` modify the noun. The
  tag sequence of "saw the man with the telescope" and "saw the man with the hat" is the same;
  only the last noun tells the trees apart;
- coordination of noun phrases, verb phrases and sentences (with a comma before `but`);
- relative clauses and sentential complements, nested inside each other;
- unary chains: (S (VP ...)) in relative clauses, (NP (PRP she)), (ADJP (JJ happy)),
  (ADVP (RB quickly)), (VP (VBD slept)).

Trees are PTB-style (a part-of-speech bracket over every word) and sentences are unique across
the splits, so held-out trees are new sentences.
"""

from __future__ import annotations

import random

from nltk import Tree

LEXICON = {
    "DT": ["the", "a", "every", "some", "this"],
    "person": ["man", "woman", "boy", "girl", "teacher", "student", "doctor", "farmer"],
    "animal": ["dog", "cat", "horse", "bird"],
    "thing": ["book", "letter", "ball", "cake", "pizza", "car", "box", "picture"],
    "instrument": ["telescope", "fork", "spoon", "hammer", "key", "knife", "camera"],
    "accessory": ["hat", "scarf", "beard", "collar", "coat", "ribbon"],
    "place": ["park", "garden", "kitchen", "city", "house", "market"],
    "JJ": ["big", "small", "old", "young", "happy", "red", "quiet", "clever"],
    "NNP": ["John", "Mary", "Alice", "Bob", "Paris"],
    "PRP": ["he", "she", "they", "we"],
    "transitive": ["saw", "ate", "found", "liked", "opened", "watched", "took", "painted"],
    "intransitive": ["slept", "laughed", "arrived", "waited", "smiled"],
    "saying": ["said", "thought", "knew", "believed"],
    "MD": ["will", "can", "might"],
    "VB": ["see", "find", "open", "watch", "take"],
    "RB": ["quickly", "quietly", "again", "yesterday"],
    "CC": ["and", "or"],
    "WDT": ["that", "which"],
}
NOUN_CLASSES = ("person", "animal", "thing")


def leaf(tag: str, word: str) -> Tree:
    return Tree(tag, [word])


class GrammarSampler:
    """Draws trees from the grammar with a seeded random stream.

    Args:
        seed: the stream's seed.
        max_depth: how deep noun and verb phrases may nest.
    """

    def __init__(self, seed: int, max_depth: int = 3) -> None:
        self.rng = random.Random(seed)
        self.max_depth = max_depth

    def word(self, kind: str) -> str:
        return self.rng.choice(LEXICON[kind])

    def chance(self, p: float, depth: int) -> bool:
        """Recursion gets rarer with depth and stops at max_depth."""
        return depth < self.max_depth and self.rng.random() < p / (1 + depth)

    def base_np(self, kind: str | None = None) -> Tree:
        kind = kind or self.rng.choice(NOUN_CLASSES)
        noun = leaf("NN", self.word(kind))
        if self.rng.random() < 0.3:
            return Tree("NP", [leaf("DT", self.word("DT")), leaf("JJ", self.word("JJ")), noun])
        return Tree("NP", [leaf("DT", self.word("DT")), noun])

    def pp(self, preposition: str, kind: str) -> Tree:
        return Tree("PP", [leaf("IN", preposition), self.base_np(kind)])

    def np(self, depth: int) -> Tree:
        r = self.rng.random()
        if r < 0.1:
            return Tree("NP", [leaf("PRP", self.word("PRP"))])
        if r < 0.18:
            return Tree("NP", [leaf("NNP", self.word("NNP"))])
        base = self.base_np()
        if self.chance(0.5, depth):  # the noun's own modifiers: accessory, origin, possessor
            kind = self.rng.choice(["accessory", "place", "person"])
            preposition = {"accessory": "with", "place": "from", "person": "of"}[kind]
            base = Tree("NP", [base, self.pp(preposition, kind)])
        if self.chance(0.35, depth):
            relative = Tree(
                "SBAR", [Tree("WHNP", [leaf("WDT", self.word("WDT"))]), Tree("S", [self.vp(depth + 1)])]
            )
            base = Tree("NP", [base, relative])
        if self.chance(0.2, depth):
            base = Tree("NP", [base, leaf("CC", self.word("CC")), self.np(depth + 1)])
        return base

    def vp(self, depth: int) -> Tree:
        r = self.rng.random()
        if r < 0.15:
            vp = Tree("VP", [leaf("VBD", self.word("intransitive"))])
        elif r < 0.25 and depth < self.max_depth:
            vp = Tree(
                "VP",
                [
                    leaf("VBD", self.word("saying")),
                    Tree("SBAR", [leaf("IN", "that"), self.clause(depth + 1)]),
                ],
            )
        elif r < 0.35:
            vp = Tree(
                "VP",
                [leaf("MD", self.word("MD")), Tree("VP", [leaf("VB", self.word("VB")), self.np(depth + 1)])],
            )
        elif r < 0.42:
            vp = Tree("VP", [leaf("VBD", "was"), Tree("ADJP", [leaf("JJ", self.word("JJ"))])])
        else:
            parts = [leaf("VBD", self.word("transitive")), self.np(depth + 1)]
            if self.chance(0.6, depth):  # the verb's own modifiers: instrument or place
                kind = self.rng.choice(["instrument", "place"])
                preposition = "with" if kind == "instrument" else self.rng.choice(["in", "at"])
                parts.append(self.pp(preposition, kind))
            vp = Tree("VP", parts)
        if self.rng.random() < 0.1:
            vp.append(Tree("ADVP", [leaf("RB", self.word("RB"))]))
        if self.chance(0.15, depth):
            vp = Tree("VP", [vp, leaf("CC", "and"), self.vp(depth + 1)])
        return vp

    def clause(self, depth: int) -> Tree:
        return Tree("S", [self.np(depth), self.vp(depth)])

    def sentence(self) -> Tree:
        if self.rng.random() < 0.1:
            tree = Tree("S", [self.clause(1), leaf(",", ","), leaf("CC", "but"), self.clause(1)])
        else:
            tree = self.clause(0)
        tree.append(leaf(".", "."))
        return tree


def grammar_treebank(
    seed: int = 0, sizes: tuple[int, int, int] = (3000, 300, 300), max_words: int = 40
) -> dict[str, list[Tree]]:
    """{train, dev, test} trees of unique sentences of at most `max_words` words."""
    sampler = GrammarSampler(seed)
    seen: set[tuple[str, ...]] = set()
    splits = {}
    for name, size in zip(("train", "dev", "test"), sizes):
        trees: list[Tree] = []
        while len(trees) < size:
            tree = sampler.sentence()
            words = tuple(tree.leaves())
            if len(words) <= max_words and words not in seen:
                seen.add(words)
                trees.append(tree)
        splits[name] = trees
    return splits
