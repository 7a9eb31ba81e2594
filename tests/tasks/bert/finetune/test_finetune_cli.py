"""The bert_finetune commands (the shared verbs, and the tasks.bert.finetune.train shim) on each
head's offline default with a tiny model: train -> evaluate -> predict -> export (Hugging Face
loads it with our logits) -> attention; the recipes; refusals in one line."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import torch
from seqeval.metrics.sequence_labeling import get_entities
from transformers import (
    AutoModelForQuestionAnswering,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    BertTokenizerFast,
    pipeline,
)

from tasks.bert.data import TOKENIZER_FILE
from tasks.bert.finetune import heads, squad, train
from tasks.bert.finetune.config import FinetuneConfig
from tasks.bert.finetune.heads import show_chunks
from tasks.bert.finetune.spec import FinetuneSpec, sample_input
from tasks.bert.finetune.splits import read_split
from tests.tasks.bert.finetune.conftest import tiny_args
from zoo.config import load_config
from zoo.data.corpus import KINDS
from zoo.train import load_trained
from zoo.verbs.cli import run_verb
from zoo.verbs.options import VerbOptions

CONFIGS = Path(__file__).resolve().parents[4] / "configs" / "bert"
DATA = Path(__file__).resolve().parents[5] / "shared" / "data"
HEADS = ("classify", "tag", "span")
STEPS = ["--train.max_steps=20", "--train.eval_every=10", "--train.save_every=10", "--train.log_every=10"]
# Inputs of each head for the transformers comparison: sentences (classify, tag), question-passage pairs.
SENTENCES = [
    ("the town lies on the banks of the river gaka .",),
    ("captain lo sailed the ship through storms .",),
]
TEXTS = {
    "classify": SENTENCES,
    "tag": SENTENCES,
    "span": [("who founded the town ?", "the town was founded by kalo in 1820 ."),
             ("what did the ship carry ?", "the ship carried coal from the bay .")],
}  # fmt: skip
# Text the built-in set never shows: capitals, accents, digits, punctuation, other scripts.
UNSEEN = ("The Town of ZÜRICH lies on the Limmat, near Café Odéon!", "naïve 1820s résumé — 東京?")
HF_CLASSES = {
    "classify": AutoModelForSequenceClassification,
    "tag": AutoModelForTokenClassification,
    "span": AutoModelForQuestionAnswering,
}


def verb(name: str, *argv: str, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    return run_verb(FinetuneSpec(), name, list(argv))


@pytest.fixture(scope="module", params=HEADS)
def run_dir(request, tmp_path_factory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp(request.param) / "run"
    train.main([*tiny_args(request.param), *STEPS, f"--train.out_dir={out}"])
    return request.param, out


def test_train_evaluate_and_predict(run_dir, monkeypatch, capsys):
    head, run = run_dir
    summary = json.loads((run / "summary.json").read_text())
    assert summary["step"] == 20 and "score" in summary["metrics"]
    record = verb("evaluate", str(run), "--split=test", "--json", "--output", str(run / "test.txt"))
    assert record["head"] == head and record["split"] == "test" and 0 <= record["score"] <= 100
    written = (run / "test.txt").read_text().splitlines()
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == record
    if head == "span":  # the official predictions file, which the SQuAD scorer reads back to the same F1
        cfg = load_trained(run, FinetuneConfig).cfg
        examples = read_split(cfg, "test")
        assert (
            squad.evaluate(squad.gold_answers(examples), json.loads("".join(written)))["f1"] == record["f1"]
        )
    else:
        assert len(written) == record["examples"]
    if head == "classify":  # the score is the written labels' agreement with the split's gold ones
        cfg = load_trained(run, FinetuneConfig).cfg
        gold = [example.label for example in read_split(cfg, "test", list(KINDS))]
        agree = sum(line.split("\t")[0] == label for line, label in zip(written, gold, strict=True))
        assert record["accuracy"] == pytest.approx(100 * agree / len(gold))
    sample = sample_input(head)
    [output] = verb("predict", str(run), "--json", stdin=sample + "\n", monkeypatch=monkeypatch)
    shown = json.loads(capsys.readouterr().out)
    assert shown["input"] == sample and shown["output"] == output
    if head == "classify":
        assert output["label"] in KINDS and 1 / len(KINDS) <= output["probability"] <= 1
    elif head == "tag":
        assert len(output) == len(sample.split())
    else:
        assert output["answer"] == sample.split("\t")[1][output["start"] : output["end"]]


def test_an_exported_directory_is_the_run_of_evaluate_and_predict(run_dir, tmp_path, monkeypatch, capsys):
    """A Hugging Face fine-tuned directory (here the run exported) scores the same on the run's
    recipe and predicts the same with it; it needs a recipe to be scored, of its own head."""
    head, run = run_dir
    out = tmp_path / "hf"
    verb("export", str(run), f"--output={out}")
    ours = verb("evaluate", str(run), "--split=test", "--json")
    theirs = verb("evaluate", str(out), f"--recipe={run / 'config.yaml'}", "--split=test", "--json")
    assert theirs["checkpoint"] == str(out) and theirs["examples"] == ours["examples"] > 0
    for key in set(ours) - {"checkpoint", "step", "task", "ema"}:
        assert theirs[key] == pytest.approx(ours[key], abs=1e-6), key
    sample = sample_input(head) + "\n"
    [from_run] = verb("predict", str(run), "--json", stdin=sample, monkeypatch=monkeypatch)
    recipe = f"--recipe={run / 'config.yaml'}"  # the windows a passage is cut into, too
    [from_hf] = verb("predict", str(out), recipe, "--json", stdin=sample, monkeypatch=monkeypatch)
    assert json.dumps(from_hf, sort_keys=True) == json.dumps(from_run, sort_keys=True)
    capsys.readouterr()
    other = next(h for h in HEADS if h != head)
    (tmp_path / "other.yaml").write_text(f"head: {other}\n")
    for argv, message in (
        ([str(out), "--split=test"], "has no data of its own: name a recipe"),
        (
            [str(out), f"--recipe={tmp_path / 'other.yaml'}"],
            f"a recipe of the {other} head, the model is a {head}",
        ),
        ([str(run), f"--recipe={run / 'config.yaml'}"], "--recipe is for a Hugging Face directory"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            verb("evaluate", *argv)
        error = capsys.readouterr().err.strip()
        assert exit_info.value.code == 2 and message in error and "\n" not in error


def test_export_loads_in_transformers_with_our_logits(run_dir, tmp_path):
    head, run = run_dir
    out = tmp_path / "hf"
    verb("export", str(run), f"--output={out}")
    ours = FinetuneSpec().load([load_trained(run, FinetuneConfig)], VerbOptions(run=str(run)))
    hf = HF_CLASSES[head].from_pretrained(out, attn_implementation="sdpa").eval()
    tokenizer = BertTokenizerFast.from_pretrained(out)
    batch = tokenizer(*zip(*TEXTS[head]), padding=True, return_tensors="pt")
    for text in (*(texts[0] for texts in TEXTS[head]), *UNSEEN):  # the whole encoding, any text
        assert tokenizer(text, add_special_tokens=False)["input_ids"] == ours.tokenizer.encode(text), text
    mask = batch["attention_mask"].bool()
    with torch.no_grad():
        expected = ours.model(batch["input_ids"], batch["token_type_ids"], mask)
        got = hf(**batch)
    if head == "span":
        torch.testing.assert_close(got.start_logits[mask], expected.start[mask], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got.end_logits[mask], expected.end[mask], atol=1e-5, rtol=1e-5)
        return
    logits = got.logits[mask] if head == "tag" else got.logits
    torch.testing.assert_close(logits, expected[mask] if head == "tag" else expected, atol=1e-5, rtol=1e-5)
    assert [hf.config.id2label[i] for i in range(len(ours.encoder.labels))] == ours.encoder.labels


def test_predict_agrees_with_the_transformers_pipeline(run_dir, tmp_path, monkeypatch, capsys):
    """classify: the text-classification pipeline's label and score; tag: the token-classification
    pipeline's label of each word's first piece (transformers 5 has no question-answering
    pipeline: span is compared through the exported logits above)."""
    head, run = run_dir
    if head == "span":
        pytest.skip("transformers 5 has no question-answering pipeline")
    out = tmp_path / "hf"
    verb("export", str(run), f"--output={out}")
    sample = sample_input(head)
    [ours] = verb("predict", str(run), "--json", stdin=sample + "\n", monkeypatch=monkeypatch)
    if head == "classify":
        [theirs] = pipeline("text-classification", model=str(out), tokenizer=str(out))(sample)
        assert ours["label"] == theirs["label"] and ours["probability"] == pytest.approx(
            theirs["score"], abs=1e-5
        )
        return
    pieces = pipeline("token-classification", model=str(out), tokenizer=str(out), ignore_labels=[])(sample)
    starts = [sum(len(word) + 1 for word in sample.split()[:i]) for i in range(len(sample.split()))]
    first_piece = {piece["start"]: piece["entity"] for piece in pieces}
    assert [first_piece[start] for start in starts] == ours


def test_attention_draws_every_layer_and_head(run_dir, tmp_path, monkeypatch):
    head, run = run_dir
    png = tmp_path / "attention.png"
    verb("attention", str(run), f"--output={png}", stdin=sample_input(head) + "\n", monkeypatch=monkeypatch)
    assert png.stat().st_size > 1000


class Terminal(io.StringIO):
    """stdin as a terminal where nothing was typed: a verb that reads it finds no line."""

    def isatty(self) -> bool:
        return True


def drawn_tokens(monkeypatch) -> list[list[str]]:
    """The tokens of each attention picture the spec asks for, in order (none is drawn)."""
    drawn: list[list[str]] = []
    monkeypatch.setattr(
        "tasks.bert.finetune.spec.plot_self_attention",
        lambda weights, tokens, path, title: drawn.append(tokens),
    )
    return drawn


def test_attention_without_input_draws_the_held_out_sample_of_the_runs_head(run_dir, tmp_path, monkeypatch):
    """No --input, no --text and stdin a terminal: attention draws the built-in held-out sample of
    the run's own head (a question and its passage for a span model), as if it were typed."""
    head, run = run_dir
    drawn = drawn_tokens(monkeypatch)
    monkeypatch.setattr("sys.stdin", Terminal())
    verb("attention", str(run), f"--output={tmp_path / 'default.png'}")
    verb("attention", str(run), f"--output={tmp_path / 'typed.png'}", stdin=sample_input(head) + "\n",
         monkeypatch=monkeypatch)  # fmt: skip
    assert len(drawn) == 2 and drawn[0] == drawn[1]
    assert drawn[0].count("[SEP]") == (2 if head == "span" else 1)


def test_predict_n_best_gives_the_best_answers_best_first(run_dir, monkeypatch, capsys):
    """--n_best 3: three distinct spans of the passage, scores falling, the first the answer of
    --n_best 1 (predict's default, whose output is one answer<TAB>score line as before)."""
    head, run = run_dir
    if head != "span":
        pytest.skip("n-best answers are a span model's")
    sample = sample_input(head)
    passage = sample.split("\t")[1]

    def predict(*argv: str) -> list:
        return verb("predict", str(run), *argv, stdin=sample + "\n", monkeypatch=monkeypatch)

    [best] = predict("--json")
    [three] = predict("--json", "--n_best=3")
    capsys.readouterr()
    assert predict("--n_best=1") == [f"{best['answer']}\t{best['score']:.4f}"]
    predict("--n_best=3")
    printed = capsys.readouterr().out.splitlines()
    assert len(three) == 3 and three[0] == best
    assert len({(answer["start"], answer["end"]) for answer in three}) == 3
    assert all(answer["answer"] == passage[answer["start"] : answer["end"]] for answer in three)
    scores = [answer["score"] for answer in three]
    assert scores == sorted(scores, reverse=True)
    assert printed == [f"{best['answer']}\t{best['score']:.4f}"] + [
        f"{answer['answer']}\t{answer['score']:.4f}" for answer in three
    ]


def test_predict_chunks_are_the_tags_decoded_by_conlleval_rules(run_dir, monkeypatch, capsys):
    """--chunks on a tag run: each line's chunks are those of the tags predict gives for it, in
    the bracketing and as word spans; another head refuses the option in one line."""
    head, run = run_dir
    sample = sample_input(head)
    if head != "tag":
        with pytest.raises(SystemExit) as exit_:
            verb("predict", str(run), "--chunks", stdin=sample + "\n", monkeypatch=monkeypatch)
        assert exit_.value.code == 2 and "--chunks" in capsys.readouterr().err
        return
    words = sample.split()
    [tags] = verb("predict", str(run), "--json", stdin=sample + "\n", monkeypatch=monkeypatch)
    [spans] = verb("predict", str(run), "--json", "--chunks", stdin=sample + "\n", monkeypatch=monkeypatch)
    assert [(c["type"], c["start"], c["end"] - 1) for c in spans] == get_entities(tags)
    assert all(c["text"] == " ".join(words[c["start"] : c["end"]]) for c in spans)
    [line] = verb("predict", str(run), "--chunks", stdin=sample + "\n", monkeypatch=monkeypatch)
    assert line == show_chunks(words, tags, as_json=False)


def test_chunks_are_shown_in_the_conll_2000_bracketing():
    words = "He reckons the current account deficit will narrow .".split()
    tags = ["B-NP", "B-VP", "B-NP", "I-NP", "I-NP", "I-NP", "I-VP", "I-VP", "O"]
    assert show_chunks(words, tags, as_json=False) == (
        "[NP He] [VP reckons] [NP the current account deficit] [VP will narrow] ."
    )  # an I- after another type starts a chunk, as conlleval reads it
    assert show_chunks(words, tags, as_json=True)[2] == {
        "type": "NP", "text": "the current account deficit", "start": 2, "end": 6
    }  # fmt: skip


def test_n_best_beyond_what_the_run_gives_is_refused_in_one_line(run_dir, monkeypatch, capsys):
    head, run = run_dir
    refused = {"--n_best=0": "must be at least 1"}
    if head == "span":  # the tiny runs keep decode.n_best = 20 answers a question
        refused["--n_best=21"] = "more than the 20 answers a question that the run's decoding keeps"
    else:
        refused["--n_best=2"] = f"n-best answers are for a span model; this one is a {head}"
    for option, message in refused.items():
        with pytest.raises(SystemExit) as exit_info:
            verb("predict", str(run), option, stdin=sample_input(head) + "\n", monkeypatch=monkeypatch)
        error = capsys.readouterr().err.strip()
        assert exit_info.value.code == 2 and message in error and "\n" not in error, option


def test_bad_input_lines_are_refused_in_one_line(run_dir, monkeypatch, capsys):
    head, run = run_dir
    bad = {"classify": "one\ttwo\tthree", "tag": None, "span": "a question without its passage"}[head]
    if bad is None:
        pytest.skip("any line of words can be tagged")
    with pytest.raises(SystemExit) as exit_info:
        verb("predict", str(run), stdin=f"{sample_input(head)}\n{bad}\n", monkeypatch=monkeypatch)
    error = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and "stdin:2:" in error and "\n" not in error


@pytest.fixture(scope="module")
def second_run(run_dir, tmp_path_factory) -> Path:
    """A run of run_dir's head from another seed and the same tokenizer (as fine-tunes of one
    pretrained encoder share theirs): an ensemble's second member."""
    head, first = run_dir
    out = tmp_path_factory.mktemp(f"{head}-seed1") / "run"
    out.mkdir()
    shutil.copy(first / TOKENIZER_FILE, out / TOKENIZER_FILE)
    train.main([*tiny_args(head), *STEPS, "--train.seed=1", f"--train.out_dir={out}"])
    return out


def mean_probability(runs: list[Path], line: str) -> tuple[torch.Tensor, list[str]]:
    """Each run's label probabilities for one sentence, computed alone, then averaged; the labels."""
    found = []
    for run in runs:
        loaded = FinetuneSpec().load([load_trained(run, FinetuneConfig)], VerbOptions(run=str(run)))
        encoded = heads.encode(loaded.cfg, [heads.read_line("classify", line, "-", 1)], loaded.tokenizer,
                               loaded.encoder.labels)  # fmt: skip
        found.append(heads.run(loaded.model, encoded, 8)[0].softmax(-1))
    return torch.stack(found).mean(0), loaded.encoder.labels


def test_an_ensemble_evaluates_and_predicts_as_one_model(run_dir, second_run, monkeypatch, capsys):
    head, run = run_dir
    together = f"--ensemble={second_run}"
    record = verb("evaluate", str(run), together, "--split=test", "--json")
    assert record["ensemble"] == [str(run), str(second_run)] and 0 <= record["score"] <= 100
    assert "and 1 more, an ensemble" in capsys.readouterr().err
    sample = sample_input(head)
    [output] = verb("predict", str(run), together, "--json", stdin=sample + "\n", monkeypatch=monkeypatch)
    if head == "classify":  # the averaging itself, for every head: tests/zoo/models/test_bert_heads.py
        mean, labels = mean_probability([run, second_run], sample)
        assert output["probability"] == pytest.approx(mean.max().item(), abs=1e-6)
        assert output["label"] == labels[mean.argmax()]
    for name, output in (("attention", "attention.png"), ("export", "export")):
        with pytest.raises(SystemExit) as exit_info:
            verb(name, str(run), together, f"--output={run.parent / output}", stdin=sample + "\n",
                 monkeypatch=monkeypatch)  # fmt: skip
        assert exit_info.value.code == 2 and "drop --ensemble" in capsys.readouterr().err


def test_an_ensemble_of_another_head_is_refused_in_one_line(run_dir, tmp_path, capsys):
    head, run = run_dir
    other = "tag" if head != "tag" else "classify"
    train.main([*tiny_args(other), *STEPS, f"--train.out_dir={tmp_path / other}"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        verb("evaluate", str(run), f"--ensemble={tmp_path / other}", "--split=test")
    error = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and "\n" not in error
    assert f"--ensemble: {tmp_path / other}" in error and "another head" in error


def test_default_recipe_equals_the_built_in_defaults():
    """An installed package has no configs/ folder: its defaults must be the same recipe."""
    assert load_config(FinetuneConfig, CONFIGS / "finetune_default.yaml") == FinetuneConfig()


RECIPES = {"sst2": "classify", "conll2000": "tag", "squad": "span"}


@pytest.mark.parametrize("recipe", [*RECIPES, *(f"{name}_minilm" for name in RECIPES)])
def test_recipes_read_the_shared_data(recipe):
    cfg = load_config(FinetuneConfig, CONFIGS / f"{recipe}.yaml")
    assert cfg.head == RECIPES[recipe.removesuffix("_minilm")] and cfg.model.init
    header = (CONFIGS / f"{recipe}.yaml").read_text().split("\n\n")[0]
    assert f"--config configs/bert/{recipe}.yaml --data.data_dir=../shared/data" in header
    if not DATA.is_dir():
        pytest.skip("no shared data directory")
    for path in (cfg.data.train, cfg.data.valid, cfg.data.test):
        assert not path or (DATA / path).is_file(), path
