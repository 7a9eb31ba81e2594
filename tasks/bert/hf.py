"""The one loader of the BERT CLIs: a zoo run of tasks.bert, or a Hugging Face directory or hub
name (those through zoo.convert.hf_bert)."""

from __future__ import annotations

from pathlib import Path

from tasks.bert.config import BertPretrainingConfig
from tasks.bert.task import tokenizer_of
from zoo.config import UserError
from zoo.convert.hf_bert import LoadedBert, download, is_hf_directory, read_hf_directory
from zoo.convert.hub import is_hub_name
from zoo.models.bert import build_bert
from zoo.train import load_trained


def load_bert(source: str, *, which: str = "best", overrides: list[str] | None = None) -> LoadedBert:
    """A zoo run directory or checkpoint file (through zoo.train.load_trained, tokenizer from
    the checkpoint), a local Hugging Face directory, or a hub name such as bert-base-uncased."""
    if not source:
        raise UserError(
            "name a run directory, a checkpoint file, a Hugging Face directory or a hub name (see --help)"
        )
    path = Path(source).expanduser()
    if is_hf_directory(path):
        return read_hf_directory(path)
    if is_hub_name(source):
        return read_hf_directory(download(source))
    trained = load_trained(path, BertPretrainingConfig, which=which, overrides=overrides)
    tokenizer = tokenizer_of(trained.artifacts, trained.path)
    model = build_bert(trained.cfg.model, tokenizer.vocab_size, tokenizer.pad_id)
    trained.load_into(model)
    return LoadedBert(
        model.eval(), tokenizer, trained.cfg.model, trained.path, recipe=trained.cfg, run_dir=trained.run_dir
    )
