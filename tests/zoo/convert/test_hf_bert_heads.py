"""zoo.convert.hf_bert_heads: Hugging Face's fine-tuned BERTs (sequence and token classification,
question answering) load with their logits and labels; any BERT directory gives the encoder of a
new head; zoo's heads export to directories that transformers' Auto classes and pipelines load
with zoo's logits (question answering, whose pipeline transformers 5 removed: its steps, decoded
by zoo.decode.spans); what the heads cannot represent is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import (
    AutoModelForQuestionAnswering,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    BertConfig,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    pipeline,
)

from zoo.config import UserError
from zoo.convert.hf_bert_heads import (
    HEAD_KINDS,
    LoadedBertHead,
    build_head,
    read_hf_head_directory,
    write_hf_head_directory,
)
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.decode.spans import best_spans
from zoo.models.bert import BertModelConfig, build_bert

TEXTS = [
    "the cat sat on the mat",
    "a dog ran in the park near the river",
    "where did the cat sit",
    "paris is the capital of france and its largest city",
]
TOKENIZER = WordPieceTokenizer.whole_words(TEXTS)
SIZE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37)
LABELS = ["O", "B-PLACE", "I-PLACE"]
# Per task: Hugging Face's class, its Auto class, and the labels its config holds ([]: none).
HF_CLASSES = {
    "text-classification": (BertForSequenceClassification, AutoModelForSequenceClassification, LABELS),
    "token-classification": (BertForTokenClassification, AutoModelForTokenClassification, LABELS),
    "question-answering": (BertForQuestionAnswering, AutoModelForQuestionAnswering, []),
}


def hf_config(labels: list[str], **extra) -> BertConfig:
    config = BertConfig(
        vocab_size=TOKENIZER.vocab_size,
        max_position_embeddings=64,
        attn_implementation="sdpa",
        **SIZE,
        **extra,
    )
    if labels:
        config.id2label = dict(enumerate(labels))
        config.label2id = {label: i for i, label in enumerate(labels)}
    return config


def noisy(model: torch.nn.Module) -> torch.nn.Module:
    """Noise on every parameter (biases, norms, heads), so that a misplaced one shows."""
    torch.manual_seed(0)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    return model.eval()


def save_hf(directory: Path, model: torch.nn.Module, config_update: dict | None = None) -> Path:
    """`model` saved by transformers, with a vocab.txt and `config_update` merged into config.json."""
    model.save_pretrained(directory)
    (directory / "vocab.txt").write_text(TOKENIZER.vocab_text())
    if config_update:
        config = json.loads((directory / "config.json").read_text())
        (directory / "config.json").write_text(json.dumps({**config, **config_update}))
    return directory


def inputs(batch: int = 3, length: int = 17):
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, TOKENIZER.vocab_size, (batch, length), generator=generator)
    types = (torch.arange(length) >= length // 2).long().expand(batch, -1).clone()
    ids[1, 11:], types[1, 11:] = 0, 0  # a padded row
    return ids, types, ids != 0


def logits_of(model, ids, types, mask, hf: bool) -> torch.Tensor:
    """The model's logits as one tensor: (B, L), (B, T, L), or start and end stacked (B, T, 2)."""
    with torch.no_grad():
        if not hf:
            out = model(ids, types, mask)
            return torch.stack(out, -1) if isinstance(out, tuple) else out
        out = model(input_ids=ids, token_type_ids=types, attention_mask=mask.long())
        return torch.stack([out.start_logits, out.end_logits], -1) if "start_logits" in out else out.logits


def assert_same_logits(ours, theirs) -> None:
    ids, types, mask = inputs()
    got, expected = logits_of(ours, ids, types, mask, False), logits_of(theirs, ids, types, mask, True)
    if got.dim() == 3:  # per token: Hugging Face computes padded positions too, undefined ones
        got, expected = got[mask], expected[mask]
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("task", HEAD_KINDS)
def test_hf_heads_load_with_their_logits_and_labels(tmp_path, task):
    hf_class, _, labels = HF_CLASSES[task]
    hf = noisy(hf_class(hf_config(labels, classifier_dropout=0.3)))
    loaded = read_hf_head_directory(save_hf(tmp_path, hf), task)
    assert loaded.labels == labels and loaded.fresh == []
    assert_same_logits(loaded.model, hf)
    if labels:
        assert loaded.model.dropout.p == 0.3


@pytest.mark.parametrize("task", HEAD_KINDS)
def test_zoo_heads_export_to_what_auto_classes_load_with_the_same_logits(tmp_path, task):
    _, auto_class, _ = HF_CLASSES[task]
    labels = ["neg", "pos", "mixed", "other"] if HEAD_KINDS[task].classifier else []
    cfg = BertModelConfig(num_layers=2, dim=32, num_heads=2, ffn_dim=37, max_len=64)
    torch.manual_seed(2)
    model = noisy(build_head(task, build_bert(cfg, TOKENIZER.vocab_size, 0), labels, dropout=0.2))
    out = write_hf_head_directory(LoadedBertHead(model, TOKENIZER, cfg, labels), tmp_path / "export")
    hf, info = auto_class.from_pretrained(out, output_loading_info=True, attn_implementation="sdpa")
    assert not any(info.values()), info  # no missing, unexpected or mismatched keys
    assert type(hf).__name__ == HEAD_KINDS[task].architecture
    assert_same_logits(model, hf.eval())
    if labels:
        assert hf.config.id2label == dict(enumerate(labels))
        assert hf.config.label2id == {label: i for i, label in enumerate(labels)}
        assert hf.config.classifier_dropout == 0.2
    again = read_hf_head_directory(out, task)  # and back: the same model
    assert again.labels == labels and again.model.state_dict().keys() == model.state_dict().keys()
    assert_same_logits(again.model, hf)


@pytest.mark.parametrize("source", ["BertModel", "BertModel without pooler", "BertForPreTraining"])
@pytest.mark.parametrize("task", HEAD_KINDS)
def test_any_bert_directory_is_the_encoder_of_a_new_head(tmp_path, task, source):
    config = hf_config([])
    if source == "BertForPreTraining":
        hf = noisy(BertForPreTraining(config))
        encoder = hf.bert
    else:
        hf = encoder = noisy(BertModel(config, add_pooling_layer=source == "BertModel"))
    directory = save_hf(tmp_path, hf)
    labels = ["x", "y"] if HEAD_KINDS[task].classifier else None
    with pytest.raises(UserError, match=f"architectures=.*no {HEAD_KINDS[task].architecture} head"):
        read_hf_head_directory(directory, task)
    loaded = read_hf_head_directory(directory, task, new_head=True, labels=labels)
    ids, types, mask = inputs()
    with torch.no_grad():
        expected = encoder(input_ids=ids, token_type_ids=types, attention_mask=mask.long())
        torch.testing.assert_close(
            loaded.model.bert.encode(ids, types, mask)[mask],
            expected.last_hidden_state[mask],
            atol=1e-5,
            rtol=1e-5,
        )
        if task == "text-classification" and source != "BertModel without pooler":
            torch.testing.assert_close(
                loaded.model.bert.pool(loaded.model.bert.encode(ids, types, mask)), expected.pooler_output
            )
    head = [f"{zoo}{param}" for _, zoo in HEAD_KINDS[task].table for param in ("weight", "bias")]
    pooler = ["bert.pooler.weight", "bert.pooler.bias"]
    new_pooler = task == "text-classification" and source == "BertModel without pooler"
    assert sorted(loaded.fresh) == sorted(head + (pooler if new_pooler else []))
    assert loaded.labels == (labels or [])


def test_a_fine_tuned_head_is_replaced_only_when_asked(tmp_path):
    hf = noisy(BertForSequenceClassification(hf_config(LABELS)))
    directory = save_hf(tmp_path, hf)
    with pytest.raises(UserError, match="no BertForTokenClassification head"):
        read_hf_head_directory(directory, "token-classification")
    with pytest.raises(UserError, match="labels are for a new head"):
        read_hf_head_directory(directory, "text-classification", labels=["a", "b"])
    for labels in (None, ["a"]):
        with pytest.raises(UserError, match="needs its labels, at least 2"):
            read_hf_head_directory(directory, "token-classification", new_head=True, labels=labels)
    loaded = read_hf_head_directory(directory, "token-classification", new_head=True, labels=["a", "b"])
    assert loaded.model.classifier.out_features == 2 and loaded.labels == ["a", "b"]
    torch.testing.assert_close(
        loaded.model.bert.embeddings.tokens.weight, hf.bert.embeddings.word_embeddings.weight
    )


# (task, config.json fields written over a saved head, what the one-line refusal names)
REFUSED = {
    "regression": ("text-classification", {"problem_type": "regression"}, "problem_type='regression'"),
    "multi-label": (
        "text-classification",
        {"problem_type": "multi_label_classification"},
        "problem_type='multi_label_classification'.*single-label",
    ),
    "tokens multi-label": (
        "token-classification",
        {"problem_type": "multi_label_classification"},
        "problem_type=",
    ),
    "one label": ("text-classification", {"id2label": {"0": "score"}}, "num_labels=1: .*regression"),
    "label ids": ("text-classification", {"id2label": {"0": "a", "2": "b"}}, "id2label ids \\[0, 2\\]"),
    "span outputs": ("question-answering", {"id2label": {"0": "a", "1": "b", "2": "c"}}, "num_labels=3"),
    "activation": ("token-classification", {"hidden_act": "relu"}, "hidden_act='relu'"),
    "unknown field": ("question-answering", {"rope_theta": 1.0}, "unknown BERT config field.*rope_theta"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_what_the_heads_cannot_represent_is_refused_by_name(tmp_path, case):
    task, written, names = REFUSED[case]
    hf_class, _, labels = HF_CLASSES[task]
    directory = save_hf(tmp_path, hf_class(hf_config(labels)), written)
    with pytest.raises(UserError, match=names) as error:
        read_hf_head_directory(directory, task)
    assert "\n" not in str(error.value)


def exported(tmp_path: Path, task: str, labels: list[str]) -> tuple[torch.nn.Module, Path]:
    cfg = BertModelConfig(num_layers=1, dim=32, num_heads=2, ffn_dim=37, max_len=64)
    torch.manual_seed(4)
    model = noisy(build_head(task, build_bert(cfg, TOKENIZER.vocab_size, 0), labels))
    return model, write_hf_head_directory(LoadedBertHead(model, TOKENIZER, cfg, labels), tmp_path)


def zoo_ids(text: str) -> torch.Tensor:
    return torch.tensor([[TOKENIZER.cls_id, *TOKENIZER.encode(text), TOKENIZER.sep_id]])


def test_text_classification_pipeline_gives_the_label_and_softmax_of_zoo_logits(tmp_path):
    labels = ["neg", "pos", "mixed"]
    model, directory = exported(tmp_path, "text-classification", labels)
    classify = pipeline("text-classification", model=str(directory), device="cpu")
    for text, result in zip(TEXTS, classify(TEXTS)):
        with torch.no_grad():
            probabilities = model(zoo_ids(text))[0].softmax(-1)
        assert result["label"] == labels[probabilities.argmax()]
        assert result["score"] == pytest.approx(probabilities.max().item(), abs=1e-5)


def test_token_classification_pipeline_gives_each_token_the_label_of_zoo_logits(tmp_path):
    model, directory = exported(tmp_path, "token-classification", LABELS)
    tag = pipeline("token-classification", model=str(directory), device="cpu", ignore_labels=[])
    for text in TEXTS:
        with torch.no_grad():
            probabilities = model(zoo_ids(text))[0].softmax(-1)
        entities = tag(text)
        assert [e["index"] for e in entities] == list(range(1, probabilities.shape[0] - 1))  # no [CLS], [SEP]
        for entity in entities:
            assert entity["entity"] == LABELS[probabilities[entity["index"]].argmax()]
            assert entity["score"] == pytest.approx(probabilities[entity["index"]].max().item(), abs=1e-5)


def test_question_answering_runs_as_the_removed_pipeline_did(tmp_path):
    """transformers 5 removed pipeline("question-answering"); its steps on the exported directory
    (AutoTokenizer's windows over a long context with offsets, AutoModelForQuestionAnswering)
    give answers from the context, and zoo.decode.spans finds the same spans in zoo's logits."""
    model, directory = exported(tmp_path, "question-answering", [])
    tokenizer = AutoTokenizer.from_pretrained(directory)
    hf = AutoModelForQuestionAnswering.from_pretrained(directory).eval()
    question, context = "where did the cat sit", " ".join(TEXTS)
    encoded = tokenizer(
        question,
        context,
        truncation="only_second",
        max_length=16,
        stride=4,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
        return_tensors="pt",
    )
    windows = encoded["input_ids"].shape[0]
    assert windows > 2
    offsets = [
        [
            tuple(o) if s == 1 else None
            for o, s in zip(encoded["offset_mapping"][w].tolist(), encoded.sequence_ids(w))
        ]
        for w in range(windows)
    ]
    ids, types, mask = encoded["input_ids"], encoded["token_type_ids"], encoded["attention_mask"]
    with torch.no_grad():
        theirs = hf(input_ids=ids, token_type_ids=types, attention_mask=mask)
        ours = model(ids, types, mask.bool())
    expected = best_spans(theirs.start_logits, theirs.end_logits, offsets, max_answer_length=5, n_best=5)
    got = best_spans(ours.start, ours.end, offsets, max_answer_length=5, n_best=5)
    assert [(s.start, s.end, s.window) for s in got] == [(s.start, s.end, s.window) for s in expected]
    torch.testing.assert_close(
        torch.tensor([s.score for s in got]), torch.tensor([s.score for s in expected])
    )
    for span in got:
        answer = context[span.start : span.end]
        assert answer and answer == answer.strip() and len(answer.split()) <= 5
