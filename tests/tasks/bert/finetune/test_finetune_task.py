"""bert_finetune through the real runner: each head overfits a handful of built-in examples,
batches resume exactly, inputs map back to words and characters, the encoder starts from a
pretrained BERT (this project's run or a Hugging Face directory), and bad input is refused."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import torch

from tasks.bert.data import TOKENIZER_FILE
from tasks.bert.finetune import heads
from tasks.bert.finetune.config import FinetuneConfig
from tasks.bert.finetune.data import IGNORE, encode_questions, encode_words
from tasks.bert.finetune.examples import builtin_set
from tasks.bert.finetune.readers import TaggedSentence
from tasks.bert.finetune.splits import read_split
from tasks.bert.finetune.task import FinetuneTask, _texts
from tasks.bert.task import BertTask
from tests.tasks.bert.conftest import tiny_recipe
from tests.tasks.bert.finetune.conftest import tiny_config
from tests.tasks.test_resume_batches import _ready, assert_same
from zoo.config import ConfigError, UserError, load_config
from zoo.convert.hf_bert import LoadedBert, read_hf_tokenizer, write_hf_directory
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import BertModelConfig, build_bert
from zoo.train import evaluation, fit

HEADS = ("classify", "tag", "span")
OVERFIT = ["--train.max_steps=600", "--optim.lr=3e-3", "--schedule.warmup_steps=10", "--data.batch_size=8",
           "--model.dropout=0", "--model.attn_dropout=0", "--train.log_every=100"]  # fmt: skip


@pytest.mark.parametrize("head", HEADS)
def test_a_tiny_model_overfits_a_handful_of_examples(head, tmp_path):
    """Memorised: the training examples scored at least 95. The run's tokenizer is the training
    text's whole words, placed where a resumed run finds its own: WordPiece training breaks ties
    in another order in every process, and some of its vocabularies cap span extraction at 92.4
    on these examples (2 of 14 processes)."""
    cfg = tiny_config(head, str(tmp_path / "run"), *OVERFIT)
    texts = _texts(head, read_split(cfg, "train"))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / TOKENIZER_FILE).write_bytes(WordPieceTokenizer.whole_words(texts).to_bytes())
    task = FinetuneTask(cfg)
    result = fit(cfg, task)
    train = read_split(cfg, "train")
    assert 20 <= len(train) <= 40
    with evaluation(result.model, "fp32") as model:
        predictions = heads.predict(cfg, heads.run(model, task.train, 64), task.train, train, task.labels)
    assert heads.score(head, predictions, train, task.labels)["score"] >= 95


@pytest.mark.parametrize("head", HEADS)
def test_a_resumed_run_sees_the_batches_of_an_uninterrupted_one(head, tmp_path):
    def build(out: Path) -> FinetuneTask:
        return FinetuneTask(tiny_config(head, str(out), "--data.batch_size=4"))

    whole = list(_ready(build, tmp_path, 1).train_batches(1))
    resumed = list(_ready(build, tmp_path, 2).train_batches(1, start=2))
    assert len(whole) > 3 and len(resumed) == len(whole) - 2
    assert_same(resumed, whole[2:])


def test_every_word_is_labelled_at_its_first_piece_only():
    tokenizer = WordPieceTokenizer.whole_words(["the cat sat on the mat ."])  # "matcat": mat ##c ##a ##t
    words = TaggedSentence(("Matcat", "sat", "on", "the", "mat", "."), ("B-X", "I-X", "O", "B-Y", "I-Y", "O"))
    encoded = encode_words(tokenizer, [words], [[1, 2, 3, 4, 5, 6]], max_len=64)
    first, labels = encoded.first[0], encoded.labels[0]
    assert [labels[p] for p in first] == [1, 2, 3, 4, 5, 6]
    assert sum(label != IGNORE for label in labels) == 6 and first[1] > first[0] + 1  # "matcat": pieces
    short = encode_words(tokenizer, [words], [[1, 2, 3, 4, 5, 6]], max_len=7)  # 5 pieces: "matcat" and "sat"
    assert [short.labels[0][p] for p in short.first[0][:2]] == [1, 2]
    assert short.first[0][2:] == [-1] * 4 and len(short.ids[0]) == 7


def test_windows_hold_the_answer_where_their_label_says():
    tokenizer = WordPieceTokenizer.train(
        [e.context for e in builtin_set("span", [20, 1, 1], 0, "train")], vocab_size=300
    )
    examples = builtin_set("span", [20, 1, 1], 0, "train")
    encoded = encode_questions(tokenizer, examples, max_len=40, doc_stride=12, max_query_length=12)
    assert max(len(ids) for ids in encoded.ids) == 40 and len(encoded) > 2 * len(examples)
    held = set()
    for offsets, (start, end), question in zip(encoded.offsets, encoded.labels, encoded.question):
        if (start, end) == (0, 0):
            continue
        example = examples[question]
        text, at = example.answers[0]
        assert example.context[offsets[start][0] : offsets[end][1]] == text and offsets[start][0] == at
        held.add(question)
    assert held == set(range(len(examples)))  # every answer is whole in some window


@pytest.fixture(scope="module")
def pretraining_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bert") / "run"
    cfg = tiny_recipe(str(out), max_seq_length=64)
    cfg.model.max_len = 64
    fit(cfg, BertTask(cfg))
    return out


def test_the_encoder_starts_from_a_pretraining_run(pretraining_run, tmp_path):
    cfg = tiny_config("classify", str(tmp_path / "run"), f"--model.init={pretraining_run}", model=False)
    task = FinetuneTask(cfg)
    task.setup(_context(tmp_path))
    model = task.build_model()
    pretrained = task.pretrained.model.state_dict()
    for name, value in model.bert.state_dict().items():
        assert torch.equal(value, pretrained[name]), name
    assert task.tokenizer.to_bytes() == (pretraining_run / "tokenizer.json").read_bytes()
    assert task.encoder.config.dim == 32 and task.encoder.config.dropout == 0.1  # the recipe's dropout


def _context(tmp_path: Path):
    from zoo.train import RunContext

    return RunContext(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"), run_dir=tmp_path)


@pytest.fixture
def hf_dir(tmp_path) -> Path:
    tokenizer = WordPieceTokenizer.train(["the town lies on the river ."] * 4, vocab_size=60, min_frequency=1)
    config = BertModelConfig(num_layers=1, dim=16, num_heads=2, ffn_dim=32, max_len=64)
    torch.manual_seed(0)
    model = build_bert(config, tokenizer.vocab_size, tokenizer.pad_id)
    return write_hf_directory(LoadedBert(model.eval(), tokenizer, config, tmp_path), tmp_path / "hf")


def hf_tokenizer(directory: Path) -> bytes:
    return read_hf_tokenizer(directory).to_bytes()


def test_a_pinned_hugging_face_encoder_loads_and_other_weights_are_refused(hf_dir, tmp_path):
    digest = hashlib.sha256((hf_dir / "model.safetensors").read_bytes()).hexdigest()
    pinned = [f"--model.init={hf_dir}", f"--model.init_sha256={digest}"]
    task = FinetuneTask(tiny_config("tag", str(tmp_path / "run"), *pinned, model=False))
    task.setup(_context(tmp_path))
    assert task.build_model().bert.dim == 16 and task.tokenizer.to_bytes() == hf_tokenizer(hf_dir)
    wrong = hashlib.sha256(b"other").hexdigest()
    with pytest.raises(UserError, match=f"SHA-256 {digest}, expected {wrong}") as err:
        init = [f"--model.init={hf_dir}", f"--model.init_sha256={wrong}"]
        FinetuneTask(tiny_config("tag", str(tmp_path / "run"), *init, model=False)).setup(_context(tmp_path))
    assert "\n" not in str(err.value)


def test_a_tokenizer_that_does_not_fit_the_encoder_is_refused(hf_dir, tmp_path):
    pieces = len((hf_dir / "vocab.txt").read_text().splitlines())
    with (hf_dir / "vocab.txt").open("a") as vocab:
        vocab.write("extra\n")
    with pytest.raises(UserError, match=f"{pieces + 1} pieces, the model only {pieces} embeddings") as err:
        cfg = tiny_config("classify", str(tmp_path / "run"), f"--model.init={hf_dir}", model=False)
        FinetuneTask(cfg).setup(_context(tmp_path))
    assert "\n" not in str(err.value)


def _write(path: Path, text: str) -> str:
    path.write_bytes(gzip.compress(text.encode()))
    return str(path)


def _setup(tmp_path: Path, head: str, *overrides: str) -> None:
    FinetuneTask(tiny_config(head, str(tmp_path / "run"), f"--data.data_dir={tmp_path}", *overrides)).setup(
        _context(tmp_path)
    )


def test_bad_data_is_refused_in_one_line(tmp_path):
    _write(tmp_path / "train.tsv.gz", "sentence\tlabel\ngood film\t1\nbad film\t0\n")
    _write(tmp_path / "dev.tsv.gz", "sentence\tlabel\nfine film\t1\nodd film\t2\n")
    with pytest.raises(UserError, match=r"dev.tsv.gz:3: label '2' is not one of \['0', '1'\]"):
        _setup(tmp_path, "classify", "--data.train=train.tsv.gz", "--data.valid=dev.tsv.gz")
    _write(tmp_path / "train.txt.gz", "He PRP B-NP\nran VBD X-VP\n\n")
    with pytest.raises(UserError, match=r"train.txt.gz:2: tag 'X-VP' is not O, B-X or I-X"):
        _setup(tmp_path, "tag", "--data.train=train.txt.gz", "--data.dev_size=1")

    def article(title: str) -> dict:
        question = {"id": title, "question": "What floods?", "answers": [{"text": "lake"}]}
        return {"title": title, "paragraphs": [{"context": "The river floods.", "qas": [question]}]}

    squad = {"data": [article("a"), article("b")]}
    _write(tmp_path / "squad.json.gz", json.dumps(squad))
    with pytest.raises(UserError, match="question a: answer 'lake' does not occur in its context"):
        _setup(tmp_path, "span", "--data.train=squad.json.gz", "--data.train_articles=1")


def test_options_of_another_head_and_sizes_beside_an_init_are_refused():
    with pytest.raises(ConfigError, match="key 'data.doc_stride': only for the span head; head is tag"):
        load_config(FinetuneConfig, None, ["head=tag", "data.doc_stride=64"])
    with pytest.raises(ConfigError, match="key 'model.head_dropout': only for the classify and tag head"):
        load_config(FinetuneConfig, None, ["head=span", "model.head_dropout=0.2"])
    with pytest.raises(ConfigError, match="key 'model.dim': the encoder's size comes from model.init"):
        load_config(FinetuneConfig, None, ["model.init=runs/x", "model.dim=64"])
    with pytest.raises(ConfigError, match="key 'head': 'parse' is not one of classify, tag, span"):
        load_config(FinetuneConfig, None, ["head=parse"])
    with pytest.raises(ConfigError, match="key 'data.labels': the built-in set brings its own labels"):
        load_config(FinetuneConfig, None, ["data.labels=[b,a]"])


def test_classify_without_a_validation_file_carves_its_dev_set_from_train(tmp_path):
    rows = [f"phrase number {i}\t{i % 2}" for i in range(40)]
    (tmp_path / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    (tmp_path / "test.tsv").write_text("sentence\tlabel\nthe test one\t1\n")
    common = [f"--data.data_dir={tmp_path}", "--data.train=train.tsv", "--data.dev_size=10"]
    cfg = tiny_config("classify", str(tmp_path / "run"), *common, "--data.test=test.tsv")
    train, dev = read_split(cfg, "train"), read_split(cfg, "valid", ["0", "1"])
    assert len(train) == 30 and len(dev) == 10
    assert sorted(e.texts[0] for e in train + dev) == sorted(r.split("\t")[0] for r in rows)
    assert [e.texts[0] for e in read_split(cfg, "test", ["0", "1"])] == ["the test one"]
    no_test = tiny_config("classify", str(tmp_path / "run2"), *common)
    assert read_split(no_test, "test", ["0", "1"]) == dev  # no test file: the carve again


def test_tag_and_span_read_their_own_validation_and_test_files_where_given(tmp_path):
    """A user's train/dev/test files (CoNLL-2003's, SQuAD's train and dev JSON) are read as
    given: the whole training file trains, nothing is carved or held out of it."""
    conll = {name: f"{name} NN B-NP\nwords NNS I-NP\n\n" for name in ("train", "dev", "test")}
    for name, text in conll.items():
        (tmp_path / f"{name}.txt").write_text(text * 3)
    common = [f"--data.data_dir={tmp_path}", "--data.train=train.txt", "--data.dev_size=1"]
    tag = tiny_config("tag", str(tmp_path / "tag"), *common, "--data.valid=dev.txt", "--data.test=test.txt")
    firsts = {split: {s.words[0] for s in read_split(tag, split)} for split in ("train", "valid", "test")}
    assert firsts == {"train": {"train"}, "valid": {"dev"}, "test": {"test"}}
    assert len(read_split(tag, "train")) == 3  # no dev carve
    no_test = tiny_config("tag", str(tmp_path / "tag2"), *common, "--data.valid=dev.txt")
    assert read_split(no_test, "test") == read_split(no_test, "valid")

    def squad(title: str) -> dict:
        paragraph = {
            "context": f"{title} is here.",
            "qas": [
                {"id": f"{title}-q", "question": "What?", "answers": [{"text": title, "answer_start": 0}]}
            ],
        }
        return {"version": "1.1", "data": [{"title": title, "paragraphs": [paragraph]}]}  # fmt: skip

    for name in ("train", "dev"):
        (tmp_path / f"{name}.json").write_text(json.dumps(squad(name)))
    files = [f"--data.data_dir={tmp_path}", "--data.train=train.json", "--data.valid=dev.json"]
    span = tiny_config("span", str(tmp_path / "span"), *files)
    assert [e.id for e in read_split(span, "train")] == ["train-q"]
    assert [e.id for e in read_split(span, "valid")] == [e.id for e in read_split(span, "test")] == ["dev-q"]


def test_data_dev_min_words_carves_whole_sentences_and_keeps_their_phrases_out_of_training(tmp_path):
    sentences = [f"sentence {i} is long enough to carve" for i in range(20)]
    phrases = [f"sentence {i} is" for i in range(20)]
    rows = [f"{text}\t{i % 2}" for i, text in enumerate(sentences + phrases)]
    (tmp_path / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    common = [f"--data.data_dir={tmp_path}", "--data.train=train.tsv", "--data.dev_size=5"]
    cfg = tiny_config("classify", str(tmp_path / "run"), *common, "--data.dev_min_words=6")
    train, dev = read_split(cfg, "train"), read_split(cfg, "valid", ["0", "1"])
    assert len(dev) == 5 and all(e.texts[0] in sentences for e in dev)
    numbers = {e.texts[0].split()[1] for e in dev}
    assert len(train) == 40 - 5 - 5  # each carved sentence takes its phrase with it
    assert not {e.texts[0].split()[1] for e in train} & numbers
    with pytest.raises(ConfigError, match="dev_min_words"):
        tiny_config("classify", str(tmp_path / "run2"), *common, "--data.dev_min_words=-1")


def test_a_missing_local_init_names_the_key_and_is_never_downloaded(tmp_path, monkeypatch):
    """The shipped recipes' model.init (runs/bert-tiny-enwiki-52k) is a local run: missing, it is
    reported as such under its key, never looked up on the Hugging Face hub."""
    import huggingface_hub

    asked = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *args, **kw: asked.append(args))
    cfg = tiny_config("classify", str(tmp_path / "run"), "--model.init=runs/no-such-run", model=False)
    with pytest.raises(UserError) as info:
        FinetuneTask(cfg).setup(_context(tmp_path))
    assert str(info.value) == (
        "model.init: runs/no-such-run: no such run directory, checkpoint or Hugging Face directory"
    )
    assert asked == []


def test_a_missing_local_init_exits_2_in_one_line_from_the_cli(tmp_path):
    from tests.faults.clirun import assert_refused, run
    from tests.tasks.bert.finetune.conftest import tiny_args

    out = tmp_path / "run"
    result = run("zoo", "train", "bert_finetune", *tiny_args("classify", model=False),
                 "--model.init=runs/bert-tiny-enwiki-52k", f"--train.out_dir={out}")  # fmt: skip
    assert_refused(result)
    assert result.stderr.strip() == (
        "error: model.init: runs/bert-tiny-enwiki-52k: "
        "no such run directory, checkpoint or Hugging Face directory"
    )
    assert not out.exists() or {p.name for p in out.iterdir()} <= {".lock"}  # nothing written
