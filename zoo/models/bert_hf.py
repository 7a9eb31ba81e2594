"""Hugging Face BERT directories in and out (zoo.models.bert's weights and the WordPiece
tokenizer): any task that reads or writes a BERT checkpoint uses these.

A directory holds `config.json`, `model.safetensors` (or `pytorch_model.bin`, read with
`weights_only=True` so no pickled code runs), `vocab.txt` and `tokenizer_config.json`
(`do_lower_case`), or the `tokenizer.json` that transformers 5 saves instead of vocab.txt. What we write is what `BertForPreTraining.save_pretrained` and
`BertTokenizerFast.save_pretrained` would: `from_pretrained` loads it with the same logits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor

from zoo.config import UserError
from zoo.convert import load_strict
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import (
    Bert,
    BertModelConfig,
    build_bert,
    config_from_hf,
    config_to_hf,
    state_from_hf,
    state_to_hf,
)

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
HUB_NAME = re.compile(r"^[\w.-]+(/[\w.-]+)?$")  # bert-base-uncased, google/bert_uncased_L-2_H-128_A-2
HUB_FILES = ["config.json", "vocab.txt", "tokenizer_config.json", "tokenizer.json", *WEIGHT_FILES]


@dataclass
class LoadedBert:
    """A BERT ready to run: the model (eval mode), its tokenizer and where it came from."""

    model: Bert
    tokenizer: WordPieceTokenizer
    config: BertModelConfig
    source: Path
    recipe: Any = None  # a zoo run's recipe (None: Hugging Face)
    run_dir: Path | None = None  # a zoo run's directory


def is_hf_directory(path: Path) -> bool:
    return (path / "config.json").is_file() and any((path / f).is_file() for f in WEIGHT_FILES)


def read_weights(directory: Path) -> tuple[dict[str, Tensor], Path]:
    """The state dict of a Hugging Face directory (safetensors preferred) and its file."""
    for name in WEIGHT_FILES:
        path = directory / name
        if path.is_file():
            try:
                if path.suffix == ".safetensors":
                    return load_file(str(path)), path
                return torch.load(path, map_location="cpu", weights_only=True), path
            except Exception as err:  # any reader failure means the same to the user
                raise UserError(f"{path}: cannot read weights: {err}") from None
    raise UserError(f"{directory}: no {' or '.join(WEIGHT_FILES)}")


def read_hf_tokenizer(directory: Path) -> WordPieceTokenizer:
    """`vocab.txt` with `do_lower_case` from tokenizer_config.json (default true, as in
    transformers), else the `tokenizer.json` that transformers 5 writes instead."""
    if not (directory / "vocab.txt").is_file() and (directory / "tokenizer.json").is_file():
        return WordPieceTokenizer.from_bytes((directory / "tokenizer.json").read_bytes())
    tokenizer_config = directory / "tokenizer_config.json"
    settings = json.loads(tokenizer_config.read_text()) if tokenizer_config.is_file() else {}
    return WordPieceTokenizer.from_vocab(
        directory / "vocab.txt", lowercase=settings.get("do_lower_case", True)
    )


# What a bare encoder checkpoint (BertModel, as sentence-transformers and most fine-tuned BERTs
# ship) lacks: the pooler (sometimes) and both pretraining heads.
HEADS = ("pooler.*", "mlm_head.*", "nsp_head.*")


def read_hf_directory(directory: str | Path, *, encoder_only: bool = False) -> LoadedBert:
    """A local Hugging Face BERT checkpoint: BertForPreTraining weights with both heads, or with
    `encoder_only` (for callers that read the last layer alone) a bare BertModel too, whose
    missing pooler and heads keep their fresh initialisation."""
    directory = Path(directory)
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise UserError(f"{directory}: no config.json (not a Hugging Face model directory)")
    cfg, vocab_size, pad_id = config_from_hf(json.loads(config_file.read_text()), source=str(config_file))
    tokenizer = read_hf_tokenizer(directory)
    if tokenizer.vocab_size > vocab_size:
        raise UserError(
            f"{directory}: vocab.txt has {tokenizer.vocab_size} pieces, the model "
            f"only {vocab_size} embeddings"
        )
    state, path = read_weights(directory)
    model = build_bert(cfg, vocab_size, pad_id)
    load_strict(
        model,
        state_from_hf(state, source=str(path)),
        source=str(path),
        allow_missing=HEADS if encoder_only else (),
        hint="" if encoder_only else "a BertForPreTraining checkpoint with both heads is needed",
    )
    return LoadedBert(model.eval(), tokenizer, cfg, directory)


def download(repo_id: str) -> Path:
    """The hub snapshot of `repo_id` (config, vocabulary, weights) in the Hugging Face cache;
    needs internet the first time."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=HUB_FILES))
    except Exception as err:  # offline, unknown name, hub errors: one message
        raise UserError(
            f"cannot download {repo_id!r} from the Hugging Face hub "
            f"({type(err).__name__}: {err}); offline, pass a local directory"
        ) from None


def write_hf_directory(loaded: LoadedBert, out: str | Path) -> Path:
    """Save as `save_pretrained` would: config.json, model.safetensors (without the tied
    decoder copies, which from_pretrained re-ties), vocab.txt, tokenizer_config.json."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model, tokenizer = loaded.model, loaded.tokenizer
    hf_config = config_to_hf(loaded.config, model.vocab_size, model.pad_id)
    (out / "config.json").write_text(json.dumps(hf_config, indent=2) + "\n")
    state = {k: v.detach().contiguous() for k, v in state_to_hf(model.state_dict()).items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "vocab.txt").write_text(tokenizer.vocab_text())
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "BertTokenizer",
                "do_lower_case": tokenizer.lowercase,
                "model_max_length": loaded.config.max_len,
            },
            indent=2,
        )
        + "\n"
    )
    return out


def load_hf_bert(source: str, *, encoder_only: bool = False) -> LoadedBert:
    """A local Hugging Face BERT directory, or a hub name downloaded once (needs internet);
    `encoder_only` as in `read_hf_directory`."""
    path = Path(source).expanduser()
    if is_hf_directory(path):
        return read_hf_directory(path, encoder_only=encoder_only)
    if not path.exists() and HUB_NAME.match(source):
        return read_hf_directory(download(source), encoder_only=encoder_only)
    raise UserError(f"{source}: not a Hugging Face BERT directory (config.json and weights) or hub name")
