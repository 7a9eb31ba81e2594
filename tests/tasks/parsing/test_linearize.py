"""Linearization round trips; the bracket constraint only ever allows well-formed trees."""

from __future__ import annotations

import random

import pytest
import torch
from nltk import Tree

from tasks.parsing.linearize import BracketSymbols, allowed_next, delinearize, linearize

TREE = Tree.fromstring("(S (NP (DT The) (NN cat)) (VP (VBD sat) (ADVP (RB down))) (. .))")
LABELS = ["S", "NP", "VP"]
TOKENS = ["<pad>", "<bos>", "<eos>", "XX"] + [f"({x}" for x in LABELS] + [f"){x}" for x in LABELS]
SYMBOLS = BracketSymbols(
    torch.tensor([4, 5, 6]), torch.tensor([7, 8, 9]), word_id=3, eos_id=2, vocab_size=len(TOKENS)
)


def test_linearize_and_back_is_the_identity() -> None:
    symbols = linearize(TREE)
    assert " ".join(symbols) == "(S (NP XX XX )NP (VP XX (ADVP XX )ADVP )VP XX )S"
    words, tags = zip(*TREE.pos())
    assert delinearize(symbols, list(words), list(tags)) == TREE
    assert delinearize(symbols, list(words)).leaves() == list(words)


@pytest.mark.parametrize("symbols", ["(S XX )NP", "(S )S", "(S XX )S XX", "(S XX XX )S", "(S XX", "XX"])
def test_delinearize_refuses_malformed(symbols: str) -> None:
    with pytest.raises(ValueError):
        delinearize(symbols.split(), ["a"])


def allowed(prefix: list[int], words: int, max_len: int) -> set[str]:
    mask = allowed_next(
        torch.tensor([prefix], dtype=torch.long), torch.tensor([words]), torch.tensor([max_len]), SYMBOLS
    )[0]
    return {TOKENS[i] for i in mask.nonzero().squeeze(1).tolist()}


def ids(text: str) -> list[int]:
    return [TOKENS.index(s) for s in text.split()]


def test_each_rule() -> None:
    assert allowed([], 2, 10) == {"(S", "(NP", "(VP"}  # the root first
    assert allowed(ids("(S"), 2, 10) == {"(S", "(NP", "(VP", "XX"}  # no empty phrase
    assert allowed(ids("(S (NP XX"), 2, 10) == {"(S", "(NP", "(VP", "XX", ")NP"}  # own label only
    assert allowed(ids("(S XX"), 2, 10) == {"(S", "(NP", "(VP", "XX"}  # root waits for all words
    assert allowed(ids("(S XX XX"), 2, 10) == {")S"}  # no words left: nothing opens
    assert allowed(ids("(S XX XX )S"), 2, 10) == {"<eos>"}
    assert allowed(ids("(S (NP"), 2, 6) == {"XX"}  # another phrase could not be closed in time


def test_random_walks_end_in_well_formed_trees_batched() -> None:
    rng = random.Random(0)
    rows = 64
    words = torch.tensor([rng.randint(1, 7) for _ in range(rows)])
    max_len = words + torch.tensor([rng.randint(2, 12) for _ in range(rows)])
    prefixes = torch.zeros(rows, 0, dtype=torch.long)
    done = torch.zeros(rows, dtype=torch.bool)
    while not done.all():
        mask = allowed_next(prefixes, words, max_len, SYMBOLS)
        assert mask.any(dim=1).all()
        choice = torch.tensor([rng.choice(row.nonzero().squeeze(1).tolist()) for row in mask])
        choice[done] = SYMBOLS.eos_id
        done |= choice == SYMBOLS.eos_id
        prefixes = torch.cat([prefixes, choice[:, None]], dim=1)
    for row, n, limit in zip(prefixes.tolist(), words.tolist(), max_len.tolist()):
        symbols = [TOKENS[i] for i in row[: row.index(SYMBOLS.eos_id)]]
        assert len(symbols) <= limit
        assert len(delinearize(symbols, [f"w{i}" for i in range(n)]).leaves()) == n
