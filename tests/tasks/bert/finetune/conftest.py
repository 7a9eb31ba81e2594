"""Tiny bert_finetune recipes that train in seconds."""

from __future__ import annotations

from tasks.bert.finetune.config import FinetuneConfig
from zoo.config import load_config

TINY_MODEL = ["--model.num_layers=1", "--model.dim=32", "--model.num_heads=2", "--model.ffn_dim=64",
              "--model.max_len=64"]  # fmt: skip
QUIET = ["--train.progress=false", "--train.tensorboard=false", "--train.threads=1"]
# Per head: a small built-in set and inputs short enough for the tiny model (span: two or more
# windows a passage, so the stride is exercised).
TINY_DATA = {
    "classify": ["--data.builtin_sizes=[6,2,2]", "--data.max_seq_length=64"],
    "tag": ["--data.builtin_sizes=[6,2,2]", "--data.max_seq_length=64"],
    "span": [
        "--data.builtin_sizes=[6,2,2]", "--data.max_seq_length=48", "--data.max_query_length=16",
        "--data.doc_stride=16",
    ],
}  # fmt: skip


def tiny_args(head: str, *, model: bool = True) -> list[str]:
    """Command-line overrides of a tiny run of `head`: the model (unless it comes from
    model.init), its data, a quiet runner."""
    return [f"--head={head}", *(TINY_MODEL if model else []), *TINY_DATA[head], *QUIET]


def tiny_config(head: str, out_dir: str, *extra: str, model: bool = True) -> FinetuneConfig:
    args = [*tiny_args(head, model=model), f"--train.out_dir={out_dir}", *extra]
    return load_config(FinetuneConfig, None, args)
