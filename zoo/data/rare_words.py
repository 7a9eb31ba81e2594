"""Rare words written `<unk>`, as WikiText built its files: every word seen fewer than N times in
the training text (WikiText: 3) becomes `<unk>` in every split. A model that scores WikiText's
files meets `<unk>` as a word; trained on text rewritten the same way, it has learned what the
token stands for (a rare word) instead of spelling out a string it never saw.

Words are runs of word characters (`\\w+`: letters, digits, underscore, any script), close to
WikiText's tokens: `well-known` is two words there too (`well @-@ known`), `Smith's` a word and
a clitic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

UNK = "<unk>"
WORD = re.compile(r"\w+")


def word_counts(texts: Iterable[str]) -> Counter[str]:
    """How often each word occurs in `texts`."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(WORD.findall(text))
    return counts


def replace_rare(texts: list[str], counts: Counter[str], below: int) -> tuple[list[str], int, int]:
    """`texts` with every word counted fewer than `below` times (unseen words too) written UNK,
    the text between words kept as it is; how many words were replaced, and of how many (both 0
    when nothing is replaced: below < 1)."""
    if below < 1:
        return texts, 0, 0
    replaced = seen = 0

    def word(match: re.Match[str]) -> str:
        nonlocal replaced, seen
        seen += 1
        if counts[match.group()] >= below:
            return match.group()
        replaced += 1
        return UNK

    return [WORD.sub(word, text) for text in texts], replaced, seen
