"""A Hugging Face fine-tuned BERT directory as the RUN of evaluate and predict: what
`save_pretrained` writes for `BertForSequenceClassification`, `BertForTokenClassification` or
`BertForQuestionAnswering` (and what `export` writes), loaded strictly with its labels
(zoo.convert.hf_bert_heads). Such a model has no recipe of its own: evaluate scores it on the data
of the recipe `--recipe` names, whose head must be the model's."""

from __future__ import annotations

import json
from pathlib import Path

from tasks.bert.finetune.config import HEADS, FinetuneConfig
from tasks.bert.finetune.task import Encoder
from zoo.config import UserError, load_config
from zoo.convert.hf_bert_heads import HEAD_KINDS, LoadedBertHead, read_hf_head_directory

ARCHITECTURES = {head: HEAD_KINDS[task].architecture for head, task in HEADS.items()}  # head -> class
ARCHITECTURE_HEADS = {architecture: head for head, architecture in ARCHITECTURES.items()}


def hf_head_of(directory: Path) -> str | None:
    """The head (classify | tag | span) that a Hugging Face directory's config.json names; None
    when `directory` holds no config.json (a zoo run, say)."""
    path = directory / "config.json"
    if not path.is_file():
        return None
    try:
        architectures = json.loads(path.read_text(encoding="utf-8")).get("architectures") or []
    except (ValueError, AttributeError) as error:  # bad JSON, or JSON that is not an object
        raise UserError(f"{path}: not a Hugging Face config ({error})") from None
    heads = [ARCHITECTURE_HEADS[name] for name in architectures if name in ARCHITECTURE_HEADS]
    if not heads:
        raise UserError(
            f"{path}: architectures={architectures}: no fine-tuned BERT head "
            f"({', '.join(ARCHITECTURE_HEADS)}); to fine-tune it: python -m zoo train bert_finetune "
            f"--model.init={directory}"
        )
    return heads[0]


def recipe_for(head: str, recipe: str, data_dir: str) -> FinetuneConfig:
    """The recipe whose data a foreign `head` model is scored on (`recipe` '' = the head's
    built-in set), with its data directory replaced by `data_dir` when given."""
    overrides = [f"data.data_dir={data_dir}"] if data_dir else []
    if not recipe:
        return load_config(FinetuneConfig, None, [f"head={head}", *overrides])
    cfg = load_config(FinetuneConfig, recipe, overrides)
    if cfg.head != head:
        raise UserError(f"--recipe {recipe}: a recipe of the {cfg.head} head, the model is a {head} model")
    return cfg


def read_hf_finetuned(directory: Path, head: str) -> tuple[LoadedBertHead, Encoder]:
    """The directory's model (eval mode) with its tokenizer and labels, and the encoder
    description a zoo run would carry."""
    hf = read_hf_head_directory(directory, HEADS[head])
    bert = hf.model.bert
    return hf, Encoder(hf.config, bert.vocab_size, bert.pad_id, hf.labels)
