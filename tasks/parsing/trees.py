"""Penn Treebank trees: reading bracketed `.mrg` files, cleaning them, and the splits.

Two readers: `read_mrg` for treebank files (trees split by brackets, however many lines each
takes) and `read_sentences` for scorer input (one sentence a line, as EVALB reads its files: a
blank line is a sentence with no parse). Both refuse bytes that are not UTF-8 with file and line.

Cleaning (what parsers train and are scored on): `-NONE-` traces are removed and so are the
constituents they leave empty; function tags and indices are cut (`NP-SBJ-1` -> `NP`,
`PP-LOC=2` -> `PP`), but labels that start with a dash (`-LRB-`, `-RRB-`) are kept whole; the
nameless (or `TOP`/`ROOT`) root bracket of a PTB tree is dropped when it holds one phrase, and
kept as `TOP` otherwise, so every tree has one phrasal root.

Splits: the standard WSJ layout (a folder of section folders 00..24 holding wsj_SSNN.mrg:
sections 02-21 train, 22 dev, 23 test) and NLTK's 10% sample (one folder of wsj_0001..0199.mrg,
split contiguously by file so no article is split: 0001-0141 train, 0142-0171 dev,
0172-0199 test; 3,098 / 420 / 396 trees).
"""

from __future__ import annotations

import re
from pathlib import Path

from nltk import Tree

from zoo.config import UserError
from zoo.data.text import decode_lines

ROOT_LABELS = ("", "TOP", "ROOT")
SPLITS = ("train", "dev", "test")
SAMPLE_FILES = {"train": (1, 141), "dev": (142, 171), "test": (172, 199)}
WSJ_SECTIONS = {"train": range(2, 22), "dev": range(22, 23), "test": range(23, 24)}


def _decoded_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 file, without their endings.

    Raises:
        UserError: a line that is not UTF-8, named with the file and the line number.
    """
    with open(path, "rb") as f:
        return list(decode_lines((raw.rstrip(b"\r\n") for raw in f), str(path)))


def _split_trees(text: str, path: Path, first_line: int = 1) -> list[tuple[int, Tree]]:
    """The trees of `text` (one per top-level bracket), each with the line it starts on."""
    trees, depth, start, start_line, line = [], 0, 0, first_line, first_line
    for pos, char in enumerate(text):
        if char == "\n":
            line += 1
        elif char == "(":
            if depth == 0:
                start, start_line = pos, line
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise UserError(f"{path}:{line}: malformed tree: ')' closes nothing")
            if depth == 0:
                trees.append((start_line, _from_string(text[start : pos + 1], path, start_line)))
        elif depth == 0 and not char.isspace():
            raise UserError(f"{path}:{line}: malformed tree: text outside brackets ({char!r})")
    if depth:
        raise UserError(f"{path}:{start_line}: malformed tree: {depth} bracket(s) never closed")
    return trees


def read_mrg(path: Path) -> list[tuple[int, Tree]]:
    """The raw trees of a bracketed treebank file, each with the line it starts on (one tree per
    top-level bracket, however many lines it takes: the layout of the Treebank's .mrg files).

    Raises:
        UserError: a line that is not UTF-8, unbalanced brackets, text outside brackets or a tree
            nltk cannot read; the message names the file and the line.
    """
    return _split_trees("\n".join(_decoded_lines(path)), path)


def read_sentences(path: Path) -> list[list[Tree]]:
    """Scorer input (the gold and test files given to EVALB): one sentence a line, as evalb.c
    reads them. A line's trees are one sentence (several trees on a line are read together, as
    evalb.c does); a blank line is an empty sentence, which the scorer counts as skipped (a
    failed parse) or, on the gold side against a parse, as an error.

    Raises:
        UserError: a line that is not UTF-8 or not whole trees (a tree spread over several
            lines, as in .mrg files, included); the message names the file and the line.
    """
    sentences = []
    for number, line in enumerate(_decoded_lines(path), start=1):
        try:
            sentences.append([tree for _, tree in _split_trees(line, path, number)])
        except UserError as err:
            raise UserError(f"{err} (scorer input: one whole sentence a line)") from None
    return sentences


# The treebank format has no escapes, where nltk (3.10) reads "\(" and "\)" as escaped brackets:
# a word ending in a backslash, "(RB \)", would swallow its bracket.
NO_ESCAPES = r"[^\s()]+"


def _read_tree(text: str) -> Tree:
    """nltk's reading of one tree whose brackets balance as written. nltk's own patterns first (the
    fast path): an escape they read unbalances such a tree and fails, and only then is the tree read
    again without escapes (caller patterns go through nltk's slower ReDoS-bounded compiler). A word
    is always followed by its tag's ")", so its escapes only ever swallow closing brackets and
    always unbalance; only a label ending in a backslash could swallow a "(" and balance one."""
    try:
        return Tree.fromstring(text)
    except ValueError:
        return Tree.fromstring(text, node_pattern=NO_ESCAPES, leaf_pattern=NO_ESCAPES)


def _from_string(text: str, path: Path, line: int) -> Tree:
    try:
        tree = _read_tree(text)
    except ValueError as err:
        raise UserError(f"{path}:{line}: malformed tree: {str(err).splitlines()[0]}") from None
    for node in tree.subtrees():
        if len(node) != 1 and any(isinstance(child, str) for child in node):
            raise UserError(
                f"{path}:{line}: malformed tree: ({node.label()} ...) mixes words "
                f"with other children (a word needs its own part-of-speech bracket)"
            )
    return tree


def base_label(label: str) -> str:
    """The label without function tags and indices: NP-SBJ-1 -> NP, NP=2 -> NP, -LRB- stays."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0]


def _strip(node: Tree | str) -> Tree | str | None:
    if isinstance(node, str):
        return node
    if node.label() == "-NONE-":
        return None
    children = [c for c in map(_strip, node) if c is not None]
    return Tree(base_label(node.label()), children) if children else None


def clean(tree: Tree) -> Tree | None:
    """The tree without traces, empty constituents, function tags and the nameless root (see
    the module docstring); None when nothing but traces was left."""
    tree = _strip(tree)
    if tree is None:
        return None
    while tree.label() in ROOT_LABELS and len(tree) == 1 and is_phrase(tree[0]):
        tree = tree[0]
    if tree.label() in ROOT_LABELS:  # several children, or a single word
        return Tree("TOP", list(tree))
    return Tree("TOP", [tree]) if is_preterminal(tree) else tree


def is_preterminal(node: Tree | str) -> bool:
    return isinstance(node, Tree) and len(node) == 1 and isinstance(node[0], str)


def is_phrase(node: Tree | str) -> bool:
    """A constituent above the part-of-speech level."""
    return isinstance(node, Tree) and not is_preterminal(node)


def load_trees(paths: list[Path]) -> list[Tree]:
    """The cleaned trees of bracketed files, in order (trees that were only traces dropped)."""
    trees = []
    for path in paths:
        trees.extend(t for t in (clean(raw) for _, raw in read_mrg(path)) if t is not None)
    return trees


def sample_files(folder: Path, split: str) -> list[Path]:
    """NLTK sample: folder/wsj_NNNN.mrg of the split's file range (see SAMPLE_FILES)."""
    first, last = SAMPLE_FILES[split]
    paths = [folder / f"wsj_{n:04d}.mrg" for n in range(first, last + 1)]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise UserError(
            f"PTB sample {split} split: {len(missing)} file(s) missing in {folder} (first: {missing[0]})"
        )
    return paths


def wsj_files(folder: Path, split: str) -> list[Path]:
    """Standard WSJ layout: folder/SS/wsj_SSNN.mrg for the split's sections (see WSJ_SECTIONS)."""
    paths = []
    for section in WSJ_SECTIONS[split]:
        found = sorted((folder / f"{section:02d}").glob("wsj_*.mrg"))
        if not found:
            raise UserError(
                f"WSJ section {section:02d} ({split}): no wsj_*.mrg in {folder / f'{section:02d}'}"
            )
        paths.extend(found)
    return paths


LAYOUTS = {"sample": sample_files, "wsj": wsj_files}


def split_files(layout: str, folder: Path, split: str) -> list[Path]:
    """The files of a split. layout: sample | wsj; split: train | dev | test."""
    if layout not in LAYOUTS:
        raise UserError(f"unknown treebank layout {layout!r}: expected one of {sorted(LAYOUTS)}")
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}: expected one of {SPLITS}")
    if not folder.is_dir():
        raise UserError(f"treebank folder not found: {folder}")
    return LAYOUTS[layout](folder, split)
