"""Hugging Face BERT <-> zoo.models.bert: state dicts, config.json, whole directories (weights and
the WordPiece tokenizer); any task that reads or writes a BERT checkpoint uses these.

A directory holds `config.json`, `model.safetensors` (or `pytorch_model.bin`, read with
`weights_only=True` so no pickled code runs), `vocab.txt` and `tokenizer_config.json`
(`do_lower_case`), or the `tokenizer.json` that transformers 5 saves instead of vocab.txt. What
we write is what `BertForPreTraining.save_pretrained` and `BertTokenizerFast.save_pretrained`
would: `from_pretrained` loads it with the same logits. Hub names are downloaded through
zoo.convert.hub.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor

from zoo.config import UserError
from zoo.convert.hub import HUB_NAME, snapshot
from zoo.convert.keys import fuse_qkv, load_strict, rename, split_qkv
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import INIT_STD, Bert, BertModelConfig, build_bert

# Hugging Face BertForPreTraining keys <-> zoo keys; query/key/value go through fuse_qkv.
HF_TABLE = [
    ("bert.embeddings.word_embeddings.", "embeddings.tokens."),
    ("bert.embeddings.position_embeddings.", "embeddings.positions."),
    ("bert.embeddings.token_type_embeddings.", "embeddings.token_types."),
    ("bert.embeddings.LayerNorm.", "embeddings.norm."),
    ("bert.encoder.layer.{i}.attention.self.query.", "encoder.layers.{i}.self_attn.q_proj."),
    ("bert.encoder.layer.{i}.attention.self.key.", "encoder.layers.{i}.self_attn.k_proj."),
    ("bert.encoder.layer.{i}.attention.self.value.", "encoder.layers.{i}.self_attn.v_proj."),
    ("bert.encoder.layer.{i}.attention.output.dense.", "encoder.layers.{i}.self_attn.out_proj."),
    ("bert.encoder.layer.{i}.attention.output.LayerNorm.", "encoder.layers.{i}.self_attn_res.norm."),
    ("bert.encoder.layer.{i}.intermediate.dense.", "encoder.layers.{i}.ffn.fc1."),
    ("bert.encoder.layer.{i}.output.dense.", "encoder.layers.{i}.ffn.fc2."),
    ("bert.encoder.layer.{i}.output.LayerNorm.", "encoder.layers.{i}.ffn_res.norm."),
    ("bert.pooler.dense.", "pooler."),
    ("cls.predictions.transform.dense.", "mlm_head.dense."),
    ("cls.predictions.transform.LayerNorm.", "mlm_head.norm."),
    ("cls.predictions.bias", "mlm_head.bias"),
    ("cls.seq_relationship.", "nsp_head."),
]
# Copies Hugging Face stores of tied weights, and its position-id buffer.
HF_REDUNDANT = ("cls.predictions.decoder.*", "bert.embeddings.position_ids")
# TensorFlow-era checkpoints name LayerNorm parameters gamma and beta.
_TF_NORM_NAMES = {"gamma": "weight", "beta": "bias"}


def state_from_hf(state: dict[str, Tensor], *, source: str = "checkpoint") -> dict[str, Tensor]:
    """A Hugging Face BertForPreTraining state dict in zoo `Bert` keys.

    A checkpoint of the bare encoder (BertModel: no "bert." prefix) is read as the encoder
    part; its missing heads are then reported by the strict load.
    """
    if not any(k.startswith(("bert.", "cls.")) for k in state):
        state = {f"bert.{k}": v for k, v in state.items()}
    state = {_modern_norm_name(k): v for k, v in state.items()}
    return fuse_qkv(rename(state, HF_TABLE, source=source, skip=HF_REDUNDANT))


def state_to_hf(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """A zoo `Bert` state dict in Hugging Face BertForPreTraining keys. Like `save_pretrained`,
    it leaves out the tied decoder copies (HF_REDUNDANT), which loading re-ties."""
    return rename(split_qkv(state), HF_TABLE, reverse=True, source="zoo BERT")


def _modern_norm_name(key: str) -> str:
    stem, _, last = key.rpartition(".")
    return f"{stem}.{_TF_NORM_NAMES[last]}" if "LayerNorm" in stem and last in _TF_NORM_NAMES else key


def config_from_hf(hf: dict[str, Any], *, source: str = "config.json") -> tuple[BertModelConfig, int, int]:
    """(model config, vocabulary size, pad id) of a Hugging Face BERT `config.json`.

    Raises:
        UserError: for a variant this model does not have (another activation or position type).
    """
    unsupported = {"hidden_act": ("gelu",), "position_embedding_type": ("absolute",)}
    for key, allowed in unsupported.items():
        if hf.get(key, allowed[0]) not in allowed:
            raise UserError(f"{source}: {key}={hf[key]!r} is not supported (only {allowed})")
    try:
        cfg = BertModelConfig(
            num_layers=hf["num_hidden_layers"],
            dim=hf["hidden_size"],
            num_heads=hf["num_attention_heads"],
            ffn_dim=hf["intermediate_size"],
            max_len=hf["max_position_embeddings"],
            type_vocab_size=hf.get("type_vocab_size", 2),
            dropout=hf.get("hidden_dropout_prob", 0.1),
            attn_dropout=hf.get("attention_probs_dropout_prob", 0.1),
            norm_eps=hf.get("layer_norm_eps", 1e-12),
        )
        return cfg, hf["vocab_size"], hf.get("pad_token_id", 0) or 0
    except KeyError as err:
        raise UserError(f"{source}: missing key {err.args[0]!r} of a BERT config") from None


def config_to_hf(cfg: BertModelConfig, vocab_size: int, pad_id: int) -> dict[str, Any]:
    """The `config.json` of `BertForPreTraining` for this model."""
    return {
        "architectures": ["BertForPreTraining"],
        "model_type": "bert",
        "vocab_size": vocab_size,
        "hidden_size": cfg.dim,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "intermediate_size": cfg.ffn_dim,
        "hidden_act": "gelu",
        "hidden_dropout_prob": cfg.dropout,
        "attention_probs_dropout_prob": cfg.attn_dropout,
        "max_position_embeddings": cfg.max_len,
        "type_vocab_size": cfg.type_vocab_size,
        "initializer_range": INIT_STD,
        "layer_norm_eps": cfg.norm_eps,
        "pad_token_id": pad_id,
        "position_embedding_type": "absolute",
    }


WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
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
    return snapshot(repo_id, HUB_FILES)


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
