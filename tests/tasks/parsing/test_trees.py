"""Reading and cleaning PTB trees; the sample's split sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from nltk import Tree

from tasks.parsing.trees import base_label, clean, load_trees, read_mrg, read_sentences, split_files
from zoo.config import UserError

PTB = """( (S (NP-SBJ-1 (DT The) (NN cat) )
    (VP (VBD sat) (NP (-NONE- *-1) ) (PP-LOC=2 (IN on) (NP (DT the) (NN mat) )))
    (-LRB- -LRB-) (NP (-NONE- *T*) ) (-RRB- -RRB-)
    (. .) ))
( (FRAG (NN Hello) ))
"""


def test_read_and_clean(tmp_path: Path) -> None:
    path = tmp_path / "wsj_0001.mrg"
    path.write_text(PTB)
    (line1, first), (line2, second) = read_mrg(path)
    assert (line1, line2) == (1, 5)
    assert clean(first) == Tree.fromstring(
        "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat))))"
        " (-LRB- -LRB-) (-RRB- -RRB-) (. .))"
    )
    assert clean(second) == Tree.fromstring("(FRAG (NN Hello))")


def test_labels_and_roots() -> None:
    assert [base_label(x) for x in ["NP-SBJ-1", "PP-LOC=2", "NP=3", "-LRB-", "-NONE-", "PRP$"]] == [
        "NP",
        "PP",
        "NP",
        "-LRB-",
        "-NONE-",
        "PRP$",
    ]
    assert clean(Tree.fromstring("( (-NONE- *) )")) is None
    # a root with several phrases, or over a bare word, stays as TOP
    assert clean(Tree.fromstring("( (S (NN a)) (S (NN b)) )")).label() == "TOP"
    assert clean(Tree.fromstring("(TOP (NN a))")) == Tree.fromstring("(TOP (NN a))")
    assert clean(Tree.fromstring("(ROOT (TOP (X (NN a))))")) == Tree.fromstring("(X (NN a))")


@pytest.mark.parametrize(
    "text, line",
    [
        ("( (S (NN a) ))\n( (S (NN b) ", 2),
        ("(S (NN a)))", 1),
        ("(S (NN a))\nword", 2),
        ("\n\n(S (NN a) (VP b c))", 3),
    ],
)
def test_malformed_tree_names_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    with pytest.raises(UserError, match=rf"bad\.mrg:{line}: malformed tree"):
        read_mrg(path)


def test_scorer_input_is_one_sentence_a_line(tmp_path: Path) -> None:
    path = tmp_path / "test.mrg"
    path.write_text("(S (NN a))\n\n(S (NN b)) (S (NN c))\n   \n")
    a, blank, two, spaces = read_sentences(path)
    assert a == [Tree.fromstring("(S (NN a))")] and blank == [] and spaces == []
    assert [t.leaves() for t in two] == [["b"], ["c"]]  # several trees on a line: one sentence
    # The treebank reader splits by brackets instead: three trees, blank lines skipped.
    assert [line for line, _ in read_mrg(path)] == [1, 3, 3]


@pytest.mark.parametrize(
    "text, line, problem",
    [
        ("(S (NN a))\n(S (NN b)\n  (VB c))\n", 2, "never closed"),  # a tree over two lines
        ("(S (NN a))\n(S (NN b)))\n", 2, "closes nothing"),
        ("(S (NN a))\n\nword\n", 3, "outside brackets"),
    ],
)
def test_scorer_input_that_is_not_a_tree_a_line_names_file_and_line(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    with pytest.raises(
        UserError, match=rf"bad\.mrg:{line}: malformed tree: .*{problem}.*one whole sentence a line"
    ):
        read_sentences(path)


@pytest.mark.parametrize("reader", [read_mrg, read_sentences])
def test_bytes_that_are_not_utf8_name_file_and_line(tmp_path: Path, reader) -> None:
    path = tmp_path / "wsj_0001.mrg"
    path.write_bytes(b"( (S (NN a)))\n( (S (NN caf\xe9)))\n")
    with pytest.raises(UserError, match=r"wsj_0001\.mrg:2: not valid UTF-8"):
        reader(path)


def test_wsj_layout(tmp_path: Path) -> None:
    for section in (2, 21, 22, 23):
        folder = tmp_path / f"{section:02d}"
        folder.mkdir()
        (folder / f"wsj_{section:02d}00.mrg").write_text("( (S (NN x) ))\n" * section)
    assert len(load_trees(split_files("wsj", tmp_path, "dev"))) == 22
    assert len(load_trees(split_files("wsj", tmp_path, "test"))) == 23
    with pytest.raises(UserError, match="section 03"):
        split_files("wsj", tmp_path, "train")


@pytest.mark.data
def test_sample_split_sizes(data_dir: Path) -> None:
    folder = data_dir / "ptb-sample" / "combined"
    sizes = {split: load_trees(split_files("sample", folder, split)) for split in ("train", "dev", "test")}
    assert {k: len(v) for k, v in sizes.items()} == {"train": 3098, "dev": 420, "test": 396}
    labels = {node.label() for trees in sizes.values() for t in trees for node in t.subtrees()}
    assert "-NONE-" not in labels and not any("-" in x[1:-1] or "=" in x for x in labels if x[0] != "-")
