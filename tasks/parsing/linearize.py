"""Trees as symbol sequences for the sequence-to-sequence parser (Vinyals et al., 2015), back,
and the bracket constraint that keeps constrained decoding on well-formed trees.

Chosen form: every phrase, the root included, opens with `(LABEL` and closes with a labelled
`)LABEL`; every word is `XX` (part-of-speech tags are not predicted, as in the paper):

    (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))  ->  (S (NP XX XX )NP (VP XX )VP XX )S

Labelled closing brackets cost nothing at decoding time (only the open label may close) and give
the decoder the label again where the constituent ends. The words are put back into the `XX`
leaves in order; their tags become `XX` (or given tags).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from nltk import Tree
from torch import Tensor

from tasks.parsing.trees import is_preterminal

WORD = "XX"


def linearize(tree: Tree) -> list[str]:
    """(S (NP (DT a) (NN b))) -> ['(S', '(NP', 'XX', 'XX', ')NP', ')S']."""
    if is_preterminal(tree):
        return [WORD]
    label = tree.label()
    return [f"({label}", *(s for child in tree for s in linearize(child)), f"){label}"]


def delinearize(symbols: list[str], words: list[str], tags: list[str] | None = None) -> Tree:
    """The tree of a symbol sequence with `words` in its leaves (tagged `tags`, else XX).

    Raises:
        ValueError: the sequence is not one well-formed tree with exactly len(words) leaves.
    """
    stack: list[Tree] = []
    root, used = None, 0
    for pos, symbol in enumerate(symbols):
        if root is not None:
            raise ValueError(f"symbol {pos} ({symbol}) follows the closed root")
        if symbol.startswith("("):
            stack.append(Tree(symbol[1:], []))
        elif symbol == WORD:
            if not stack or used == len(words):
                raise ValueError(f"symbol {pos}: a word outside any phrase or beyond the {len(words)} words")
            stack[-1].append(Tree(tags[used] if tags else WORD, [words[used]]))
            used += 1
        elif symbol.startswith(")"):
            if not stack or stack[-1].label() != symbol[1:] or not len(stack[-1]):
                raise ValueError(
                    f"symbol {pos} ({symbol}) closes nothing, the wrong label or an empty phrase"
                )
            node = stack.pop()
            if stack:
                stack[-1].append(node)
            else:
                root = node
        else:
            raise ValueError(f"symbol {pos}: unknown symbol {symbol!r}")
    if root is None or used != len(words):
        raise ValueError(f"incomplete tree: {len(stack)} open phrase(s), {used} of {len(words)} words")
    return root


@dataclass
class BracketSymbols:
    """Where the tree symbols sit in a target vocabulary.

    open_ids, close_ids: (L,) ids of `(X` and `)X` for the same label X at the same index.
    word_id: the id of XX; eos_id: end of sequence; vocab_size: V.
    """

    open_ids: Tensor
    close_ids: Tensor
    word_id: int
    eos_id: int
    vocab_size: int

    def __post_init__(self) -> None:
        # Per id: +1 opens, -1 closes (depth change), and the label index of a bracket (-1 else).
        self.delta = torch.zeros(self.vocab_size, dtype=torch.long)
        self.delta[self.open_ids], self.delta[self.close_ids] = 1, -1
        self.label = torch.full((self.vocab_size,), -1, dtype=torch.long)
        labels = torch.arange(len(self.open_ids))
        self.label[self.open_ids], self.label[self.close_ids] = labels, labels


def allowed_next(prefixes: Tensor, num_words: Tensor, max_len: Tensor, symbols: BracketSymbols) -> Tensor:
    """Which next ids keep each prefix on the way to a well-formed tree; pure and batched.

    The rules: the first symbol opens the root; a word (XX) only inside an open phrase and while
    words are left; a phrase closes only with its own label, never right after it opened (no
    empty phrase), and the root closes only when every word is used; nothing but EOS after the
    root; a phrase opens only if a word is left to fill it and the tree can still be finished
    (every word and every close) within `max_len` symbols. So every prefix it allows can be
    completed, and every completed output has exactly `num_words` XX leaves.

    Args:
        prefixes: (N, t) generated ids so far (no BOS), all well-formed under these rules.
        num_words: (N,) words of each row's sentence.
        max_len: (N,) the most symbols before EOS (the decoder forces EOS there).
        symbols: the vocabulary's tree symbols.

    Returns:
        (N, V) bool, True = may come next.
    """
    n, t = prefixes.shape
    device = prefixes.device
    delta, label = symbols.delta.to(device)[prefixes], symbols.label.to(device)[prefixes]
    depth_after = delta.cumsum(dim=1)  # (N, t)
    depth = delta.sum(dim=1)
    words_left = num_words.to(device) - (prefixes == symbols.word_id).sum(dim=1)
    last_opened = (delta[:, -1:] == 1).any(dim=1)
    # The innermost open phrase: the last opening whose depth nothing after it fell below.
    # A leading column stands for "none" (label -1), so an empty prefix needs no special case.
    later_min = depth_after.flip(1).cummin(dim=1).values.flip(1)
    still_open = (delta == 1) & (later_min >= depth_after)
    position = torch.arange(1, t + 1, device=device).expand(n, t)
    last_open = torch.cat([prefixes.new_zeros(n, 1), position * still_open], dim=1).max(dim=1).values
    top = torch.cat([prefixes.new_full((n, 1), -1), label], dim=1).gather(1, last_open[:, None]).squeeze(1)

    inside = depth > 0
    finished = (depth == 0) & (t > 0)
    fits = t + 1 + words_left + depth + 1 <= max_len.to(device)
    may_open = ~finished & (words_left > 0) & fits
    may_close = inside & ~last_opened & ((depth > 1) | (words_left == 0))

    allowed = torch.zeros(n, symbols.vocab_size, dtype=torch.bool, device=device)
    allowed[:, symbols.open_ids.to(device)] = may_open[:, None]
    close_ids = symbols.close_ids.to(device)
    labels = torch.arange(len(close_ids), device=device)
    allowed[:, close_ids] = may_close[:, None] & (top[:, None] == labels)
    allowed[:, symbols.word_id] = inside & (words_left > 0)
    allowed[:, symbols.eos_id] = finished
    return allowed
