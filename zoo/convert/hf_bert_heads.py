"""Hugging Face's fine-tuned BERTs <-> zoo.models.bert_heads: BertForSequenceClassification,
BertForTokenClassification and BertForQuestionAnswering directories both ways, and any BERT
directory (BertModel, BertForPreTraining: MiniLM, Google's BERT) as the encoder of a new head.

The encoder converts through zoo.convert.hf_bert (state_from_hf and state_to_hf, its config
fields, tokenizer and files); this module adds the heads' keys, the labels (config.json's
`id2label`, `label2id`) and the head's dropout (`classifier_dropout`). Tasks are named as
Hugging Face's pipelines name them (HEAD_KINDS). What we write is what `save_pretrained` of the
same class would: `AutoModelFor...from_pretrained` and `pipeline(task, ...)` load it with the
same logits.

Refused, in one line naming the field: `problem_type` other than single-label classification
(regression, multi-label: a sigmoid or a mean-squared loss, which these heads are not), fewer
than 2 labels, a question-answering head with other than 2 outputs; and, as for pretrained BERT,
every field or key zoo's BERT cannot represent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from torch import Tensor, nn

from zoo.config import UserError
from zoo.convert.hf_bert import (
    HF_CONFIG_FIELDS,
    MAPS,
    HFKind,
    Only,
    config_to_hf,
    read_hf_config_and_tokenizer,
    read_weights,
    state_from_hf,
    state_to_hf,
    write_hf_files,
)
from zoo.convert.keys import RenameTable, load_strict, rename
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import Bert, BertModelConfig, build_bert
from zoo.models.bert_heads import (
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)

BertHeadModel = BertForSequenceClassification | BertForTokenClassification | BertForQuestionAnswering

# A fine-tuned BERT's config.json: a BERT's fields, with the labels and the head's dropout read
# (HF_CONFIG_FIELDS calls them irrelevant: a pretrained BERT has no such head) and the problem
# type limited to what a softmax head computes. label2id stays irrelevant: transformers reads
# the outputs' names from id2label, and we write label2id from it.
HEAD_CONFIG_FIELDS: dict[str, str | Only] = {
    **HF_CONFIG_FIELDS,
    "num_labels": MAPS,
    "id2label": MAPS,
    "classifier_dropout": MAPS,
    "problem_type": Only(
        (None, "single_label_classification"),
        "zoo's BERT heads are single-label classifiers (softmax over the labels), not regression "
        "or multi-label (sigmoid) ones",
    ),
}
BERT_HEADS = HFKind(
    "BERT", "bert", "Bert", HEAD_CONFIG_FIELDS, "HEAD_CONFIG_FIELDS in zoo.convert.hf_bert_heads"
)


class HeadKind(NamedTuple):
    """One fine-tuning head as Hugging Face and zoo name it."""

    architecture: str  # Hugging Face's class: config.json's `architectures`
    model: type[BertHeadModel]
    table: RenameTable  # the head's keys, Hugging Face prefix -> zoo prefix
    classifier: bool  # has labels and a dropout (else the 2-output span head)


# By the name of the Hugging Face pipeline that runs the exported directory.
HEAD_KINDS = {
    "text-classification": HeadKind(
        "BertForSequenceClassification", BertForSequenceClassification, [("classifier.", "classifier.")], True
    ),
    "token-classification": HeadKind(
        "BertForTokenClassification", BertForTokenClassification, [("classifier.", "classifier.")], True
    ),
    "question-answering": HeadKind(
        "BertForQuestionAnswering", BertForQuestionAnswering, [("qa_outputs.", "span_head.")], False
    ),
}
# The heads' key prefixes in Hugging Face checkpoints: the pretraining heads (BertForPreTraining,
# BertForMaskedLM), which no fine-tuned model reads, and the fine-tuning ones a new head replaces.
PRETRAINING_HEAD = "cls."
FINE_TUNING_HEADS = ("classifier.", "qa_outputs.")
POOLER = "bert.pooler.*"


@dataclass
class LoadedBertHead:
    """A fine-tuned (or to be fine-tuned) BERT: the model, its tokenizer and its labels."""

    model: BertHeadModel
    tokenizer: WordPieceTokenizer
    config: BertModelConfig  # the encoder's
    labels: list[str]  # class names in output order ([] for question answering)
    source: Path | None = None
    fresh: list[str] = field(default_factory=list)  # model keys left at their initialisation


def head_kind(task: str) -> HeadKind:
    if task not in HEAD_KINDS:
        raise UserError(f"unknown BERT head task {task!r}: one of {', '.join(HEAD_KINDS)}")
    return HEAD_KINDS[task]


def task_of(model: nn.Module) -> str:
    """The HEAD_KINDS name of a zoo head model."""
    for task, kind in HEAD_KINDS.items():
        if type(model) is kind.model:
            return task
    raise UserError(f"{type(model).__name__} is not one of zoo's BERT head models")


def build_head(task: str, bert: Bert, labels: list[str], *, dropout: float = 0.1) -> BertHeadModel:
    """The head model of `task` over `bert`'s encoder, with a fresh head for `labels` (none for
    question answering)."""
    kind = head_kind(task)
    if not kind.classifier:
        return kind.model(bert)
    return kind.model(bert, len(labels), dropout=dropout)


def head_state_from_hf(
    state: dict[str, Tensor], task: str, *, new_head: bool = False, source: str = "checkpoint"
) -> dict[str, Tensor]:
    """A Hugging Face BERT state dict in the zoo keys of `task`'s head model: the encoder through
    `state_from_hf` (a bare BertModel's unprefixed keys too), the head through its table. The
    pretraining heads are left out, and with `new_head` every fine-tuning head as well; any
    other key no table matches is refused by name."""
    kind = head_kind(task)
    own = tuple(foreign for foreign, _ in kind.table)
    dropped = (PRETRAINING_HEAD, *FINE_TUNING_HEADS) if new_head else (PRETRAINING_HEAD, *own)
    encoder = {k: v for k, v in state.items() if not k.startswith(dropped)}
    out = {f"bert.{k}": v for k, v in state_from_hf(encoder, source=source).items()}
    if not new_head:
        out.update(rename({k: v for k, v in state.items() if k.startswith(own)}, kind.table, source=source))
    return out


def head_state_to_hf(state: dict[str, Tensor], task: str) -> dict[str, Tensor]:
    """A zoo head model's state dict in Hugging Face keys (the inverse of head_state_from_hf)."""
    kind = head_kind(task)
    encoder = {k.removeprefix("bert."): v for k, v in state.items() if k.startswith("bert.")}
    head = {k: v for k, v in state.items() if not k.startswith("bert.")}
    return {**state_to_hf(encoder), **rename(head, kind.table, reverse=True, source="zoo BERT head")}


def labels_from_hf(hf: dict[str, Any], *, source: str = "config.json") -> list[str]:
    """The outputs' names in order: id2label (ids 0..L-1), else LABEL_i for num_labels, else
    Hugging Face's default two."""
    id2label, num_labels = hf.get("id2label"), hf.get("num_labels")
    if not id2label:
        return [f"LABEL_{i}" for i in range(2 if num_labels is None else num_labels)]
    try:
        by_id = {int(k): v for k, v in id2label.items()}  # JSON keys are strings
    except ValueError:
        raise UserError(f"{source}: id2label keys {sorted(id2label)} are not integers") from None
    if sorted(by_id) != list(range(len(by_id))):
        raise UserError(f"{source}: id2label ids {sorted(by_id)} are not 0..{len(by_id) - 1}")
    if num_labels is not None and num_labels != len(by_id):
        raise UserError(f"{source}: num_labels={num_labels} but id2label has {len(by_id)} labels")
    return [str(by_id[i]) for i in range(len(by_id))]


def head_config_to_hf(
    cfg: BertModelConfig, vocab_size: int, pad_id: int, task: str, labels: list[str], dropout: float
) -> dict[str, Any]:
    """The config.json of `task`'s Hugging Face class: the encoder's, the architecture, and for
    classifiers the labels both ways and the head's dropout."""
    kind = head_kind(task)
    hf = {**config_to_hf(cfg, vocab_size, pad_id), "architectures": [kind.architecture]}
    if not kind.classifier:
        return hf
    if len(set(labels)) != len(labels):
        raise UserError(f"labels {labels} repeat a name: label2id cannot map them back")
    return {
        **hf,
        "id2label": {str(i): label for i, label in enumerate(labels)},
        "label2id": {label: i for i, label in enumerate(labels)},
        "classifier_dropout": dropout,
    }


def read_hf_head_directory(
    directory: str | Path,
    task: str,
    *,
    new_head: bool = False,
    labels: list[str] | None = None,
    dropout: float | None = None,
) -> LoadedBertHead:
    """A local Hugging Face BERT directory as `task`'s head model (eval mode).

    Without `new_head`, the directory must hold that head (config.json's architectures names
    its class), which loads with its labels, strictly. With `new_head`, any BERT directory
    (BertModel, BertForPreTraining, another fine-tuned head) gives the encoder, and the head starts
    fresh for `labels` (classifiers only); a pooler the checkpoint lacks starts fresh too.

    Args:
        task: a key of HEAD_KINDS ("text-classification", "token-classification",
            "question-answering").
        dropout: the head's (classifiers; default: classifier_dropout, else hidden_dropout_prob).
    """
    directory, kind = Path(directory), head_kind(task)
    found = read_hf_config_and_tokenizer(directory, kind=BERT_HEADS)
    source = str(directory / "config.json")
    labels = _new_labels(kind, labels) if new_head else _stored_labels(found.hf_config, kind, labels, source)
    if dropout is None:  # Hugging Face's: the head's own, else the encoder's hidden dropout
        dropout = found.hf_config.get("classifier_dropout")
        dropout = found.config.dropout if dropout is None else dropout
    bert = build_bert(found.config, found.vocab_size, found.pad_id)
    model = build_head(task, bert, labels, dropout=dropout)
    state, path = read_weights(directory)
    fresh = load_strict(
        model,
        head_state_from_hf(state, task, new_head=new_head, source=str(path)),
        source=str(path),
        allow_missing=([f"{zoo}*" for _, zoo in kind.table] + [POOLER]) if new_head else (),
        allow_unused=() if model.bert.pooler is not None else (POOLER,),
    )
    return LoadedBertHead(model.eval(), found.tokenizer, found.config, labels, directory, fresh)


def _new_labels(kind: HeadKind, labels: list[str] | None) -> list[str]:
    if kind.classifier and len(labels or []) < 2:
        raise UserError(
            f"a new {kind.architecture} head needs its labels, at least 2 (labels=[...]): {labels}"
        )
    if not kind.classifier and labels:
        raise UserError(f"{kind.architecture} has no labels: its head scores span starts and ends")
    return list(labels or [])


def _stored_labels(hf: dict[str, Any], kind: HeadKind, labels: list[str] | None, source: str) -> list[str]:
    """The labels of the head stored in the directory, which must be `kind`'s."""
    architectures = hf.get("architectures") or []
    if kind.architecture not in architectures:
        raise UserError(
            f"{source}: architectures={architectures}: no {kind.architecture} head to load "
            "(new_head=True starts a fresh one over its encoder)"
        )
    if labels is not None:
        raise UserError(f"{source}: labels are for a new head (new_head=True); this one has id2label")
    stored = labels_from_hf(hf, source=source)
    if not kind.classifier:
        if len(stored) != 2:
            raise UserError(
                f"{source}: num_labels={len(stored)} in a {kind.architecture} config: "
                "zoo's span head has 2 outputs (start, end)"
            )
        return []
    if len(stored) < 2:
        raise UserError(
            f"{source}: num_labels={len(stored)}: Hugging Face reads one output as a regression, "
            "zoo's heads are classifiers of at least 2 labels"
        )
    return stored


def write_hf_head_directory(loaded: LoadedBertHead, out: str | Path) -> Path:
    """Save as the Hugging Face class's `save_pretrained` would, with the tokenizer's files:
    config.json (labels from `loaded.labels`), model.safetensors, vocab.txt, tokenizer_config.json."""
    model, cfg = loaded.model, loaded.config
    task = task_of(model)
    classifier = HEAD_KINDS[task].classifier
    if classifier and len(loaded.labels) != model.classifier.out_features:
        raise UserError(f"{len(loaded.labels)} labels for a head of {model.classifier.out_features} outputs")
    dropout = model.dropout.p if classifier else 0.0
    hf_config = head_config_to_hf(cfg, model.bert.vocab_size, model.bert.pad_id, task, loaded.labels, dropout)
    state = head_state_to_hf(model.state_dict(), task)
    return write_hf_files(out, hf_config, state, loaded.tokenizer, cfg.max_len)
