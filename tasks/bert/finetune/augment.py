"""A transfer set for distillation (Tang et al., 2019, "Distilling Task-Specific Knowledge from
BERT into Simple Neural Networks", section 3.3): copies of the training texts with words masked
and n-grams cut out, which the teacher labels and the student learns without gold labels.

Each copy masks every word with probability P_MASK, then with probability P_NGRAM keeps only a
random n-gram (n from 1 to MAX_N) of it. Tang et al.'s third rule, swapping a word for another
of the same part of speech, needs a tagger and is left out. Copies equal to a training text or to
an earlier copy are dropped, so an item may get fewer than `copies`.
"""

from __future__ import annotations

import random

from tasks.bert.finetune.readers import Example

P_MASK, P_NGRAM, MAX_N = 0.1, 0.25, 5
NO_LABEL = ""  # outside every label set: encoded as IGNORE, so only the teacher's term reads it


def augmented(examples: list[Example], copies: int, seed: int, mask: str) -> list[Example]:
    """Up to `copies` new examples per example, in order, without labels; `mask` the mask token."""
    rng = random.Random(seed)
    seen = {e.texts for e in examples}
    found = []
    for example in examples:
        for _ in range(copies):
            texts = tuple(_copy(text, rng, mask) for text in example.texts)
            if texts not in seen:
                seen.add(texts)
                found.append(Example(texts, NO_LABEL))
    return found


def _copy(text: str, rng: random.Random, mask: str) -> str:
    words = [mask if rng.random() < P_MASK else word for word in text.split()]
    if len(words) > 1 and rng.random() < P_NGRAM:
        n = rng.randint(1, min(MAX_N, len(words)))
        start = rng.randrange(len(words) - n + 1)
        words = words[start : start + n]
    return " ".join(words)
