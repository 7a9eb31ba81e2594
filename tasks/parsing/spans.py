"""Trees as labelled spans for the chart parser, and back.

A constituent is a span (i, j) of fenceposts (words i..j-1) with a label. A unary chain is one
span with one collapsed label joined by `+` (S -> VP over the same words: `S+VP`), as Stern et
al. (2017) and Kitaev & Klein (2018) do, so every span has at most one label; spans that are no
constituent have the empty label "". Part-of-speech tags are not span labels: the chart parser
predicts them with its own per-word classifier, and a chain that ends on a single word
(`(NP (PRP it))`) is the label of that one-word span (`NP`).
"""

from __future__ import annotations

from nltk import Tree

from tasks.parsing.trees import is_phrase

Labelled = tuple[int, int, str]
UNARY = "+"


def tree_spans(tree: Tree) -> list[Labelled]:
    """The constituents of a tree as (start, end, label) in pre-order, unary chains collapsed."""
    spans: list[Labelled] = []

    def walk(node: Tree, start: int) -> int:
        chain = [node.label()]
        while len(node) == 1 and is_phrase(node[0]):
            node = node[0]
            chain.append(node.label())
        index = len(spans)
        spans.append((start, start, ""))  # its end is known after the children
        end = start
        for child in node:
            end = walk(child, end) if is_phrase(child) else end + 1
        spans[index] = (start, end, UNARY.join(chain))
        return end

    walk(tree, 0)
    return spans


def spans_tree(spans: list[Labelled], words: list[str], tags: list[str]) -> Tree:
    """The tree with these nested constituents over the tagged words (empty labels skipped);
    under TOP when no constituent covers the whole sentence."""
    items = sorted((s for s in spans if s[2]), key=lambda s: (s[0], -s[1]))
    position = 0

    def children(start: int, end: int) -> list[Tree]:
        nonlocal position
        out, k = [], start
        while k < end:
            if position < len(items) and items[position][0] == k and items[position][1] <= end:
                i, j, label = items[position]
                position += 1
                node = children(i, j)
                for part in reversed(label.split(UNARY)):
                    node = [Tree(part, node)]
                out += node
                k = j
            else:
                out.append(Tree(tags[k], [words[k]]))
                k += 1
        return out

    top = children(0, len(words))
    return top[0] if len(top) == 1 and is_phrase(top[0]) else Tree("TOP", top)
