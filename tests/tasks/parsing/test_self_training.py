"""Self-training: silver trees from a trained parser (tasks.parsing.silver) and extra training
trees beside an upsampled treebank (data.extra_train, data.upsample_primary)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from nltk import Tree

from tasks.parsing import parse, silver, train
from tasks.parsing.data import treebank_tokens
from tasks.parsing.task import ParsingTask
from tasks.parsing.trees import read_mrg
from tests.tasks.parsing.conftest import tiny_chart_run, tiny_config
from zoo.train import RunContext

WIKI = """<doc id="1" url="http://en.wikipedia.org/wiki?curid=1" title="Dogs">
Dogs

History.
The dog saw a cat in the park. It ran. The dog saw a cat in the park.
She did n't like the big old cat that the dog saw near the house by the river in the town.
A formula_1 is not a sentence about dogs.
The cat saw a dog with a telescope.
</doc>
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return tiny_chart_run(tmp_path_factory.mktemp("run"))


def test_silver_parses_each_qualifying_sentence_once_as_parse_does(run_dir: Path, tmp_path: Path) -> None:
    text = tmp_path / "wiki_00"
    text.write_text(WIKI)
    out = tmp_path / "silver.mrg"
    written = silver.main(
        [str(run_dir), f"--input={text}", f"--output={out}", "--min_words=4", "--max_words=12", "--threads=1"]
    )
    trees = [Tree.fromstring(line) for line in out.read_text().splitlines()]
    # Skipped: the heading, "It ran." (3 words), the repeat, the 21-word sentence, the markup.
    expected = ["The dog saw a cat in the park.", "The cat saw a dog with a telescope."]
    assert written == 2 and [t.leaves() for t in trees] == [treebank_tokens(s) for s in expected]
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("\n".join(expected) + "\n")
    assert out.read_text().splitlines() == parse.main([str(run_dir), f"--input={sentences}", "--threads=1"])
    silver.main(
        [str(run_dir), f"--input={tmp_path}", f"--output={out}", "--limit=1", "--min_words=4", "--threads=1"]
    )  # a folder of wiki_NN files
    assert len(out.read_text().splitlines()) == 1


def test_a_silver_tree_with_a_word_ending_in_a_backslash_reads_back(run_dir: Path, tmp_path: Path) -> None:
    # nltk reads "\\)" as an escaped bracket: (RB \\) would swallow its tree's closing bracket.
    (tmp_path / "in.txt").write_text("The dog saw a cat \\ in the park .\nThe cat saw a dog in the park .\n")
    out = tmp_path / "silver.mrg"
    args = [f"--input={tmp_path / 'in.txt'}", "--format=text", f"--output={out}", "--threads=1"]
    assert silver.main([str(run_dir), *args]) == 2
    assert [tree.leaves() for _, tree in read_mrg(out)] == [
        treebank_tokens("The dog saw a cat \\ in the park ."),
        treebank_tokens("The cat saw a dog in the park ."),
    ]


def test_silver_reads_its_old_option_names_with_a_note(run_dir: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "in.txt").write_text("The dog saw a cat in the park .\n")
    out = tmp_path / "silver.mrg"
    args = [f"--input={tmp_path / 'in.txt'}", "--format=text", f"--out={out}", "--sentences=1", "--threads=1"]
    assert silver.main([str(run_dir), *args]) == 1 and len(out.read_text().splitlines()) == 1
    err = capsys.readouterr().err
    assert "--out is now --output" in err and "--sentences is now --limit" in err


def test_silver_refuses_a_parser_without_tags(tmp_path: Path, capsys) -> None:
    run = tmp_path / "seq2seq"
    train.main(
        [
            f"--train.out_dir={run}",
            "--train.max_steps=1",
            "--train.eval_every=0",
            "--train.save_every=0",
            "--train.progress=false",
            "--train.tensorboard=false",
            "--model.kind=seq2seq",
            "--decode.beam_size=2",
            "--data.grammar_sizes=[20,2,2]",
            "--model.dim=32",
            "--model.ffn_dim=64",
            "--model.encoder_layers=1",
            "--model.decoder_layers=1",
        ]
    )
    (tmp_path / "in.txt").write_text("The dog saw a cat .\n")
    with pytest.raises(SystemExit) as stop:
        silver.main(
            [str(run), f"--input={tmp_path / 'in.txt'}", "--format=text", f"--output={tmp_path / 'o.mrg'}"]
        )
    assert stop.value.code == 2 and "only the chart parser predicts" in capsys.readouterr().err
    assert not (tmp_path / "o.mrg").exists()


def _epoch_sentences(task: ParsingTask) -> Counter:
    """How often an epoch's batches hold each sentence, as word ids."""
    return Counter(
        tuple(row[1 : n + 1])
        for batch in task.train_batches(0)
        for row, n in zip(batch.input.words.tolist(), batch.input.lengths.tolist())
    )


def test_an_epoch_reads_the_treebank_upsampled_and_each_extra_tree_once(handful, tmp_path: Path) -> None:
    extra_trees = [t.copy(deep=True) for t in handful["train"][:3]]
    for tree in extra_trees:
        tree[tree.leaf_treeposition(0)] = "zebra"  # a word the treebank lacks
    extra = tmp_path / "extra.mrg"
    extra.write_text("".join(t.pformat(margin=10**6) + "\n" for t in extra_trees))
    cfg = tiny_config("chart", str(tmp_path / "run"), 1)
    cfg.data.extra_train, cfg.data.upsample_primary = [str(extra)], 3
    task, alone = (
        ParsingTask(cfg, handful),
        ParsingTask(tiny_config("chart", str(tmp_path / "alone"), 1), handful),
    )
    context = RunContext(rank=0, world_size=1, local_rank=0, device="cpu")
    task.setup(context), alone.setup(context)
    gold = Counter(tuple(task.vocab.word_ids(t.leaves())) for t in handful["train"])
    assert _epoch_sentences(alone) == gold
    assert _epoch_sentences(task) == Counter({s: 3 * n for s, n in gold.items()}) + Counter(
        tuple(task.vocab.word_ids(t.leaves())) for t in extra_trees
    )
    # One vocabulary with and without extra trees (so their parsers ensemble), and the same rare
    # words: upsampling does not make a word seen once in the treebank common.
    assert task.vocab.to_json() == alone.vocab.to_json() and "zebra" not in task.vocab.word_index
    assert task.rare == alone.rare and task.rare


def test_extra_vocab_min_count_adds_the_frequent_extra_words_after_the_treebanks(
    handful, tmp_path: Path
) -> None:
    extra_trees = [t.copy(deep=True) for t in handful["train"][:3]]
    for i, tree in enumerate(extra_trees):
        tree[tree.leaf_treeposition(0)] = "zebra"  # three times
        tree[tree.leaf_treeposition(1)] = f"okapi{i}"  # once each
    extra = tmp_path / "extra.mrg"
    extra.write_text("".join(t.pformat(margin=10**6) + "\n" for t in extra_trees))
    context = RunContext(rank=0, world_size=1, local_rank=0, device="cpu")
    tasks = {}
    for count in (0, 2, 1):
        cfg = tiny_config("seq2seq", str(tmp_path / f"run{count}"), 1)
        cfg.data.extra_train, cfg.data.extra_vocab_min_count = [str(extra)], count
        tasks[count] = ParsingTask(cfg, handful)
        tasks[count].setup(context)
    treebank = tasks[0].vocab.words
    assert "zebra" not in treebank
    assert tasks[2].vocab.words == [*treebank, "zebra"]
    assert tasks[1].vocab.words == [*treebank, "zebra", "okapi0", "okapi1", "okapi2"]
    assert tasks[1].rare == tasks[0].rare  # rarity is the treebank's


def test_extra_trees_with_a_label_the_treebank_lacks_name_the_file_and_line(tmp_path: Path, capsys) -> None:
    extra = tmp_path / "extra.mrg"
    extra.write_text(
        "(S (NP (DT the) (NN dog)) (VP (VBD ran)))\n(S (NP (DT a) (NN cat))\n (FOO (VBD sat)))\n"
    )
    for case, (args, message) in enumerate(
        (
            ([f"--data.extra_train=[{extra}]"], f"{extra}:2: FOO: not a tag or label of the treebank"),
            ([f"--data.extra_train=[{tmp_path / 'none.mrg'}]"], "is not a file"),
            (["--data.upsample_primary=0"], "key 'data.upsample_primary': must be at least 1"),
        )
    ):
        with pytest.raises(SystemExit) as stop:
            tiny_chart_run(tmp_path / f"run{case}", *args)
        assert stop.value.code == 2 and message in capsys.readouterr().err
