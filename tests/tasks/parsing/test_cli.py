"""The CLIs on a tiny run: train, parse (stdin, --pretty), attention (span scores, the tree,
the seq2seq cross-attention), evaluate (trees in PTB format, ensembles), through the shims and the
shared verbs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import matplotlib.image
import pytest
import torch
from nltk import Tree

from tasks.parsing import evaluate, parse, train
from tasks.parsing.chart.batches import chart_input
from tasks.parsing.config import ParsingConfig
from tasks.parsing.spec import ParsingOptions, ParsingSpec, load_runs
from tests.tasks.parsing.conftest import tiny_chart_run
from zoo.config import load_config
from zoo.verbs.cli import run_verb

REPO = Path(__file__).resolve().parents[3]


def test_default_recipe_file_equals_the_schema_defaults() -> None:
    assert load_config(ParsingConfig, REPO / "configs/parsing/default.yaml", []) == ParsingConfig()


@pytest.mark.parametrize(
    "name", sorted(p.stem for p in (REPO / "configs/parsing").glob("*.yaml") if p.stem != "default")
)
def test_recipes_load(name: str) -> None:
    cfg = load_config(ParsingConfig, REPO / f"configs/parsing/{name}.yaml", [])
    assert cfg.data.source in ("sample", "wsj")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return tiny_chart_run(tmp_path_factory.mktemp("run"))


def test_train_ends_with_a_test_score(run_dir: Path) -> None:
    assert (run_dir / "test.json").is_file() and "f1" in json.loads((run_dir / "test.json").read_text())


def attention(*argv: str):
    return run_verb(ParsingSpec(), "attention", list(argv))


def test_parse_reads_stdin_and_draws(run_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("The dog saw a cat.\n\nShe didn't smile.\n"))
    lines = parse.main([str(run_dir), "--threads=1"])
    assert lines[1] == ""  # a blank line stays blank: outputs line up with inputs
    trees = [Tree.fromstring(line) for line in lines if line]
    assert [t.leaves() for t in trees] == [
        ["The", "dog", "saw", "a", "cat", "."],
        ["She", "did", "n't", "smile", "."],
    ]
    sentence = _write(tmp_path, "The dog saw a cat.")
    scores, png = tmp_path / "scores.png", tmp_path / "tree.png"
    attention(str(run_dir), f"--input={sentence}", f"--output={scores}", "--threads=1")  # span scores
    attention(str(run_dir), f"--input={sentence}", f"--output={png}", "--picture=tree", "--threads=1")
    assert png.stat().st_size > 1000 and scores.stat().st_size > 1000
    words = _write(tmp_path, "a b")
    (one_line,) = parse.main([str(run_dir), "--pretokenized", f"--input={words}", "--threads=1"])
    capsys.readouterr()
    parse.main([str(run_dir), "--pretty", "--pretokenized", f"--input={words}", "--threads=1"])
    drawn = io.StringIO()
    Tree.fromstring(one_line).pretty_print(stream=drawn)  # nltk's drawing of the same tree
    assert capsys.readouterr().out.rstrip("\n") == drawn.getvalue().rstrip("\n")


def test_the_old_picture_options_name_the_attention_verb(run_dir: Path, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        parse.main([str(run_dir), "--png=x.png"])
    assert stop.value.code == 2 and "attention parsing RUN --picture=tree" in capsys.readouterr().err


def _write(folder: Path, text: str) -> Path:
    path = folder / "in.txt"
    path.write_text(text + "\n")
    return path


def test_evaluate_writes_ptb_trees_and_scores(run_dir: Path, tmp_path: Path) -> None:
    pred, gold_file = tmp_path / "test.pred.mrg", tmp_path / "test.gold.mrg"
    result = evaluate.main(
        [str(run_dir), "--split", "test", f"--output={pred}", f"--gold={gold_file}", "--threads=1"]
    )
    predicted = pred.read_text().splitlines()
    gold = gold_file.read_text().splitlines()
    assert len(predicted) == len(gold) == result["sentences"] == 5
    assert [Tree.fromstring(p).leaves() for p in predicted] == [Tree.fromstring(g).leaves() for g in gold]
    assert json.loads((run_dir / "eval_test.json").read_text())["f1"] == result["f1"]
    dev = evaluate.main([str(run_dir), "--split=dev", "--limit=2", "--threads=1"])  # dev = valid
    assert dev["split"] == "valid" and dev["sentences"] == 2


@pytest.fixture(scope="module")
def seq2seq_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("seq2seq")
    train.main(
        [
            f"--train.out_dir={out}",
            "--train.max_steps=2",
            "--train.eval_every=0",
            "--train.save_every=0",
            "--train.progress=false",
            "--train.tensorboard=false",
            "--train.threads=1",
            "--model.kind=seq2seq",
            "--model.word_pointer=true",
            "--decode.beam_size=2",
            "--data.grammar_sizes=[40,5,5]",
            "--model.dim=32",
            "--model.ffn_dim=64",
            "--model.encoder_layers=1",
            "--model.decoder_layers=2",
        ]
    )
    return out


def test_attention_draws_the_seq2seq_cross_attention(seq2seq_run: Path, tmp_path: Path, capsys) -> None:
    png = tmp_path / "attention.png"
    sentence = _write(tmp_path, "The dog saw a cat .")
    attention(str(seq2seq_run), f"--input={sentence}", f"--output={png}", "--pretokenized", "--threads=1")
    line = capsys.readouterr().out.strip()
    assert Tree.fromstring(line).leaves() == ["The", "dog", "saw", "a", "cat", "."]
    height, width, _ = matplotlib.image.imread(png).shape
    assert height > width  # 2 layers of (symbols + EOS) rows over 4 heads of 7 source columns


def test_a_picture_for_the_other_parser_kind_is_refused_before_parsing(
    run_dir: Path, tmp_path, capsys
) -> None:
    with pytest.raises(SystemExit) as stop:
        attention(str(run_dir), "--picture=attention", f"--input={_write(tmp_path, 'a b')}", "--threads=1")
    assert stop.value.code == 2 and "only for the seq2seq parser" in capsys.readouterr().err


def test_an_ensemble_averages_its_members_span_scores_and_tag_probabilities(
    run_dir: Path, tmp_path: Path
) -> None:
    other = tiny_chart_run(tmp_path / "seed1", "--train.seed=1")
    ensemble = load_runs(ParsingOptions(run=str(run_dir), ensemble=str(other)))
    members = [load_runs(ParsingOptions(run=str(run))).model.eval() for run in (run_dir, other)]
    x = chart_input([["the", "dog", "saw", "a", "cat"], ["she", "smiled"]], ensemble.vocab)
    with torch.no_grad():
        scores, tags = ensemble.model.eval()(*x.model_inputs())
        outputs = [member(*x.model_inputs()) for member in members]
    assert not torch.allclose(outputs[0][0], outputs[1][0])  # two different parsers
    torch.testing.assert_close(scores, (outputs[0][0] + outputs[1][0]) / 2)
    torch.testing.assert_close(tags, (outputs[0][1].log_softmax(-1) + outputs[1][1].log_softmax(-1)) / 2)


def test_evaluate_an_ensemble_of_a_parser_with_itself_parses_as_the_parser(
    run_dir: Path, tmp_path: Path
) -> None:
    alone_file, twice_file = tmp_path / "alone.mrg", tmp_path / "twice.mrg"
    alone = evaluate.main([str(run_dir), "--split", "test", f"--output={alone_file}", "--threads=1"])
    twice = evaluate.main(
        [str(run_dir), "--split", "test", f"--ensemble={run_dir}", f"--output={twice_file}", "--threads=1"]
    )
    assert twice["ensemble"] == [str(run_dir)] * 2 and "ensemble" not in alone
    assert twice["members"] == [alone["checkpoint"]] * 2 and "members" not in alone
    assert twice_file.read_text() == alone_file.read_text()
    assert twice["f1"] == alone["f1"]


def test_a_seq2seq_ensemble_of_a_parser_with_itself_parses_as_the_parser(
    seq2seq_run: Path, tmp_path: Path
) -> None:
    """Beam search over the members' mean next-symbol probabilities, word pointer and cache
    included: two copies of one parser search as that parser does."""
    alone_file, twice_file = tmp_path / "alone.mrg", tmp_path / "twice.mrg"
    common = ["--split", "test", "--limit=6", "--threads=1"]
    alone = evaluate.main([str(seq2seq_run), *common, f"--output={alone_file}"])
    twice = evaluate.main([str(seq2seq_run), *common, f"--ensemble={seq2seq_run}", f"--output={twice_file}"])
    assert twice["ensemble"] == [str(seq2seq_run)] * 2 and twice["beam_size"] == alone["beam_size"] == 2
    assert twice_file.read_text() == alone_file.read_text() and twice["f1"] == alone["f1"]


def test_an_ensemble_of_other_kinds_or_vocabularies_is_refused(
    run_dir: Path, seq2seq_run: Path, tmp_path: Path, capsys
) -> None:
    other_treebank = tiny_chart_run(
        tmp_path / "other", "--data.grammar_sizes=[30,5,5]", "--data.grammar_seed=3"
    )
    for member, message in (
        (seq2seq_run, "an ensemble's members are parsers of one kind"),
        (other_treebank, "another treebank vocabulary"),
    ):
        with pytest.raises(SystemExit) as stop:
            evaluate.main([str(run_dir), f"--ensemble={member}", "--threads=1"])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and message in err and str(member) in err
