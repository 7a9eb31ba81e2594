"""Reading and cleaning PTB trees; the sample's split sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from nltk import Tree

from tasks.parsing.trees import base_label, clean, load_trees, read_mrg, split_files
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
