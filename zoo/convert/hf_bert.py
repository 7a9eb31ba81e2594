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
from typing import Any, NamedTuple

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, normalizers
from torch import Tensor

from zoo.config import UserError
from zoo.convert.hub import is_hub_name, snapshot
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
# Hugging Face's position-id buffer. (The masked-LM decoder copies go through _decoder.)
HF_REDUNDANT = ("bert.embeddings.position_ids",)
HF_DECODER = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")
# TensorFlow-era checkpoints name LayerNorm parameters gamma and beta.
_TF_NORM_NAMES = {"gamma": "weight", "beta": "bias"}


def state_from_hf(
    state: dict[str, Tensor], *, tied: bool = True, source: str = "checkpoint"
) -> dict[str, Tensor]:
    """A Hugging Face BertForPreTraining state dict in zoo `Bert` keys.

    A checkpoint of the bare encoder (BertModel: no "bert." prefix) is read as the encoder
    part; its missing heads are then reported by the strict load.

    Args:
        tied: the config's `tie_word_embeddings`. zoo's masked-LM head always reuses the word
            embeddings, so a decoder weight in the checkpoint (untied, or a stored copy, which
            transformers 5 also leaves untied when it differs) loads only when it equals them;
            the decoder's bias is what Hugging Face adds, so it becomes the head's bias.
    """
    if not any(k.startswith(("bert.", "cls.")) for k in state):
        state = {f"bert.{k}": v for k, v in state.items()}
    state = {_modern_norm_name(k): v for k, v in state.items()}
    state = _decoder(state, tied, source)
    return fuse_qkv(rename(state, HF_TABLE, source=source, skip=HF_REDUNDANT))


def _decoder(state: dict[str, Tensor], tied: bool, source: str) -> dict[str, Tensor]:
    """The state without the decoder's keys (its bias as the head's), or a refusal when the
    decoder is not the word embeddings: zoo's BERT cannot represent another one."""
    weight, bias = HF_DECODER
    if weight not in state:
        if not tied and any(k.startswith("cls.predictions.") for k in state):
            raise UserError(
                f"{source}: tie_word_embeddings=False and no {weight}: transformers would start "
                "a random decoder, zoo's BERT would tie it to the word embeddings"
            )
        return state
    embeddings = state.get("bert.embeddings.word_embeddings.weight")
    if embeddings is None or not torch.equal(state[weight], embeddings):
        raise UserError(
            f"{source}: {weight} differs from the word embeddings (tie_word_embeddings={tied}): "
            "zoo's BERT ties its masked-LM decoder to them and cannot load an untied one"
        )
    out = {k: v for k, v in state.items() if k not in HF_DECODER}
    if bias in state:
        out["cls.predictions.bias"] = state[bias]
    return out


def state_to_hf(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """A zoo `Bert` state dict in Hugging Face BertForPreTraining keys. Like `save_pretrained`,
    it leaves out the tied decoder copies (HF_DECODER), which loading re-ties."""
    return rename(split_qkv(state), HF_TABLE, reverse=True, source="zoo BERT")


def _modern_norm_name(key: str) -> str:
    stem, _, last = key.rpartition(".")
    return f"{stem}.{_TF_NORM_NAMES[last]}" if "LayerNorm" in stem and last in _TF_NORM_NAMES else key


class Only(NamedTuple):
    """A config field whose values are limited to `values` (absent: the first, Hugging Face's
    default); `why` says what another value would be."""

    values: tuple[Any, ...]
    why: str


MAPS, IRRELEVANT = "maps", "irrelevant"
# Fields every Hugging Face config may hold that change nothing the loaded model computes
# (PretrainedConfig's, across transformers versions); each family's table adds its own.
HF_COMMON_FIELDS: dict[str, str | Only] = {
    # Bookkeeping, storage precision (weights are read into float32), training only.
    "architectures": IRRELEVANT,  # the kind is model_type's; the heads are checked by the weights
    "transformers_version": IRRELEVANT,
    "_name_or_path": IRRELEVANT,
    "_commit_hash": IRRELEVANT,
    "_attn_implementation_autoset": IRRELEVANT,  # which kernel computes the same attention
    "dtype": IRRELEVANT,
    "torch_dtype": IRRELEVANT,
    "use_bfloat16": IRRELEVANT,
    "initializer_range": IRRELEVANT,  # initialisation of fresh weights
    "gradient_checkpointing": IRRELEVANT,
    "chunk_size_feed_forward": IRRELEVANT,  # the same feed-forward, run in chunks
    "output_hidden_states": IRRELEVANT,
    "output_attentions": IRRELEVANT,
    "return_dict": IRRELEVANT,
    "torchscript": IRRELEVANT,
    "tf_legacy_loss": IRRELEVANT,
    # Task heads zoo does not load (their weights are refused by name).
    "classifier_dropout": IRRELEVANT,
    "id2label": IRRELEVANT,
    "label2id": IRRELEVANT,
    "num_labels": IRRELEVANT,
    "problem_type": IRRELEVANT,
    "finetuning_task": IRRELEVANT,
    "task_specific_params": IRRELEVANT,
    # Read by tokenizers and generate(), not by the model.
    **dict.fromkeys(
        "bos_token_id eos_token_id sep_token_id decoder_start_token_id tokenizer_class prefix "
        "max_length min_length do_sample early_stopping num_beams num_beam_groups "
        "diversity_penalty temperature top_k top_p typical_p repetition_penalty length_penalty "
        "no_repeat_ngram_size encoder_no_repeat_ngram_size bad_words_ids num_return_sequences "
        "output_scores return_dict_in_generate forced_bos_token_id forced_eos_token_id "
        "remove_invalid_values exponential_decay_length_penalty suppress_tokens "
        "begin_suppress_tokens".split(),
        IRRELEVANT,
    ),
}
# Every field a Hugging Face BERT config.json may hold (BertConfig().to_dict() of transformers 5,
# plus the fields older versions and Google's original bert_config.json wrote). Each one maps to
# the model (config_from_hf reads it), is irrelevant to what the loaded model computes, or loads
# with the values of `Only` alone; any other field or value refuses the load, naming it.
HF_CONFIG_FIELDS: dict[str, str | Only] = {
    # The model: BertModelConfig, the vocabulary size and the [PAD] id.
    "vocab_size": MAPS,
    "hidden_size": MAPS,
    "num_hidden_layers": MAPS,
    "num_attention_heads": MAPS,
    "intermediate_size": MAPS,
    "max_position_embeddings": MAPS,
    "type_vocab_size": MAPS,
    "hidden_dropout_prob": MAPS,
    "attention_probs_dropout_prob": MAPS,
    "layer_norm_eps": MAPS,
    "pad_token_id": MAPS,
    # What zoo's BERT computes.
    "model_type": Only(("bert",), "zoo reads BERT checkpoints only"),
    "hidden_act": Only(("gelu",), "zoo's BERT uses exact GELU"),
    "position_embedding_type": Only(("absolute",), "zoo's BERT has learned absolute positions only"),
    "is_decoder": Only((False,), "causal self-attention; zoo's BERT is a bidirectional encoder"),
    "add_cross_attention": Only((False,), "cross-attention layers; zoo's BERT has none"),
    "is_encoder_decoder": Only((False,), "an encoder-decoder; zoo's BERT is an encoder"),
    "pruned_heads": Only(({},), "pruned attention heads; zoo's BERT keeps every head"),
    # False loads only a decoder that copies the embeddings (state_from_hf checks the weights).
    "tie_word_embeddings": Only((True, False), "a boolean"),
    "use_cache": IRRELEVANT,  # decoders only (is_decoder is refused)
    "cross_attention_hidden_size": IRRELEVANT,  # with add_cross_attention only
    "tie_encoder_decoder": IRRELEVANT,  # with is_encoder_decoder only
    **HF_COMMON_FIELDS,
    # Irrelevant: Google's original bert_config.json, read by no code.
    **dict.fromkeys(
        "directionality pooler_fc_size pooler_num_attention_heads pooler_num_fc_layers "
        "pooler_size_per_head pooler_type".split(),
        IRRELEVANT,
    ),
}
# What other model_type values are, for the refusal.
MODEL_KINDS = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "xlm-roberta": "XLM-RoBERTa",
    "camembert": "CamemBERT",
    "distilbert": "DistilBERT",
    "albert": "ALBERT",
    "electra": "ELECTRA",
    "deberta": "DeBERTa",
    "deberta-v2": "DeBERTa-v2",
    "mpnet": "MPNet",
    "modernbert": "ModernBERT",
    "megatron-bert": "Megatron-BERT",
    "ernie": "ERNIE",
    "gpt2": "GPT-2",
    "openai-gpt": "OpenAI GPT",
    "gpt_bigcode": "GPTBigCode",
    "gpt_neo": "GPT-Neo",
    "gptj": "GPT-J",
    "llama": "Llama",
    "t5": "T5",
}


class HFKind(NamedTuple):
    """A model family as Hugging Face configs describe it, for `check_hf_config`."""

    name: str  # in messages: "BERT"
    model_type: str  # config.json's model_type
    architecture: str  # how its `architectures` entries start (configs older than model_type)
    fields: dict[str, str | Only]  # every field it may hold (as HF_CONFIG_FIELDS)
    table: str  # where `fields` is defined, for the message


BERT = HFKind("BERT", "bert", "Bert", HF_CONFIG_FIELDS, "HF_CONFIG_FIELDS in zoo.convert.hf_bert")


def check_hf_config(hf: dict[str, Any], *, source: str = "config.json", kind: HFKind = BERT) -> None:
    """Refuse, in one line naming the field, its value and the model kind, any field of a
    Hugging Face config that `kind.fields` does not map or know to be irrelevant."""
    _check_model_kind(hf, source, kind)
    unknown = sorted(k for k in hf if k not in kind.fields)
    if unknown:
        raise UserError(
            f"{source}: unknown {kind.name} config field(s) {', '.join(unknown)}: "
            f"zoo cannot tell whether they change the model (see {kind.table})"
        )
    for key, rule in kind.fields.items():
        if isinstance(rule, Only) and key in hf and not _is_one_of(hf[key], rule.values):
            raise UserError(f"{source}: {key}={hf[key]!r} in a {kind.name} config cannot load: {rule.why}")


def _is_one_of(value: Any, values: tuple[Any, ...]) -> bool:
    return any(type(value) is type(v) and value == v for v in values)  # 0 is not False here


def _check_model_kind(hf: dict[str, Any], source: str, kind: HFKind) -> None:
    """Refuse a config of another family, naming what it is (model_type, else `architectures`)."""
    model_type = hf.get("model_type")
    if model_type is None:  # configs older than model_type: the architectures tell
        others = [a for a in hf.get("architectures") or [] if not str(a).startswith(kind.architecture)]
        if others:
            raise UserError(f"{source}: architectures={others} without model_type: not a {kind.name} model")
    elif model_type != kind.model_type:
        other = MODEL_KINDS.get(model_type, repr(model_type))
        raise UserError(
            f"{source}: model_type={model_type!r}: a {other} model, not {kind.name} "
            f"(this loader reads {kind.name} checkpoints only)"
        )


def config_from_hf(
    hf: dict[str, Any], *, source: str = "config.json", kind: HFKind = BERT
) -> tuple[BertModelConfig, int, int]:
    """(model config, vocabulary size, pad id) of a Hugging Face BERT `config.json`.

    Args:
        kind: the fields it may hold (BERT; zoo.convert.hf_bert_heads' for fine-tuned heads).

    Raises:
        UserError: for another kind of model, a variant this model does not have, or a field
            `kind.fields` does not know (one line naming it).
    """
    check_hf_config(hf, source=source, kind=kind)
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


def names_hf_model(source: str) -> bool:
    """Whether `source` names a Hugging Face model: a directory holding one, or a hub name that
    is no local path (anything else is a zoo run directory or checkpoint)."""
    path = Path(source).expanduser()
    return is_hf_directory(path) or is_hub_name(source)


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
                raise UserError(f"{path}: cannot read weights: {_one_line(err)}") from None
    raise UserError(f"{directory}: no {' or '.join(WEIGHT_FILES)}")


def _one_line(err: Exception) -> str:
    """A reader's error as one line: torch's weights_only refusal spans paragraphs, of which the
    line naming the refused global is the one that says what the file holds."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()] or [type(err).__name__]
    return next((line for line in lines if "GLOBAL" in line), lines[0])


# tokenizer_config.json's normaliser settings with BertTokenizerFast's defaults: transformers
# applies them over tokenizer.json's own normaliser too, defaults included.
TOKENIZER_SETTINGS = {"do_lower_case": True, "strip_accents": None, "tokenize_chinese_chars": True}


def read_hf_tokenizer(directory: Path) -> WordPieceTokenizer:
    """`vocab.txt`, else the `tokenizer.json` that transformers 5 writes instead, normalised as
    tokenizer_config.json says (TOKENIZER_SETTINGS), as `BertTokenizerFast.from_pretrained` does."""
    settings = _tokenizer_settings(directory / "tokenizer_config.json")
    if not (directory / "vocab.txt").is_file() and (directory / "tokenizer.json").is_file():
        pipeline = Tokenizer.from_str((directory / "tokenizer.json").read_text())
        pipeline.normalizer = normalizers.BertNormalizer(
            clean_text=True,
            handle_chinese_chars=settings["tokenize_chinese_chars"],
            strip_accents=settings["strip_accents"],
            lowercase=settings["do_lower_case"],
        )
        return WordPieceTokenizer(pipeline)
    return WordPieceTokenizer.from_vocab(
        directory / "vocab.txt",
        lowercase=settings["do_lower_case"],
        strip_accents=settings["strip_accents"],
        chinese_chars=settings["tokenize_chinese_chars"],
    )


def _tokenizer_settings(path: Path) -> dict[str, bool | None]:
    """TOKENIZER_SETTINGS as `path` sets them; a value BERT's normaliser cannot take is refused."""
    found = json.loads(path.read_text()) if path.is_file() else {}
    settings = {key: found.get(key, default) for key, default in TOKENIZER_SETTINGS.items()}
    for key, value in settings.items():
        if not (isinstance(value, bool) or (value is None and key == "strip_accents")):
            raise UserError(f"{path}: {key}={value!r} is not a setting of BERT's WordPiece tokenizer")
    return settings


def tokenizer_config(tokenizer: WordPieceTokenizer, max_len: int) -> dict[str, Any]:
    """The tokenizer_config.json that makes BertTokenizerFast normalise as `tokenizer` does."""
    normalizer = json.loads(tokenizer.tokenizer.to_str())["normalizer"]
    return {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": normalizer["lowercase"],
        "strip_accents": normalizer["strip_accents"],
        "tokenize_chinese_chars": normalizer["handle_chinese_chars"],
        "model_max_length": max_len,
    }


# What a bare encoder checkpoint (BertModel, as sentence-transformers and most fine-tuned BERTs
# ship) lacks: the pooler (sometimes) and both pretraining heads.
HEADS = ("pooler.*", "mlm_head.*", "nsp_head.*")


class HFDirectory(NamedTuple):
    """What a Hugging Face BERT directory holds besides the weights: its config.json, checked and
    read, and its tokenizer."""

    hf_config: dict[str, Any]
    config: BertModelConfig
    vocab_size: int
    pad_id: int
    tokenizer: WordPieceTokenizer


def read_hf_config_and_tokenizer(directory: Path, *, kind: HFKind = BERT) -> HFDirectory:
    """The config (its fields checked against `kind`) and tokenizer of a Hugging Face BERT
    directory, refused when the vocabulary has more pieces than the model has embeddings."""
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise UserError(f"{directory}: no config.json (not a Hugging Face model directory)")
    hf_config = json.loads(config_file.read_text())
    cfg, vocab_size, pad_id = config_from_hf(hf_config, source=str(config_file), kind=kind)
    tokenizer = read_hf_tokenizer(directory)
    if tokenizer.vocab_size > vocab_size:
        raise UserError(
            f"{directory}: vocab.txt has {tokenizer.vocab_size} pieces, the model "
            f"only {vocab_size} embeddings"
        )
    return HFDirectory(hf_config, cfg, vocab_size, pad_id, tokenizer)


def read_hf_directory(directory: str | Path, *, encoder_only: bool = False) -> LoadedBert:
    """A local Hugging Face BERT checkpoint: BertForPreTraining weights with both heads, or with
    `encoder_only` (for callers that read the last layer alone) a bare BertModel too, whose
    missing pooler and heads keep their fresh initialisation."""
    directory = Path(directory)
    hf_config, cfg, vocab_size, pad_id, tokenizer = read_hf_config_and_tokenizer(directory)
    state, path = read_weights(directory)
    model = build_bert(cfg, vocab_size, pad_id)
    load_strict(
        model,
        state_from_hf(state, tied=hf_config.get("tie_word_embeddings", True), source=str(path)),
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
    model, cfg = loaded.model, loaded.config
    hf_config = config_to_hf(cfg, model.vocab_size, model.pad_id)
    return write_hf_files(out, hf_config, state_to_hf(model.state_dict()), loaded.tokenizer, cfg.max_len)


def write_hf_files(
    out: str | Path,
    hf_config: dict[str, Any],
    hf_state: dict[str, Tensor],
    tokenizer: WordPieceTokenizer,
    max_len: int,
) -> Path:
    """A Hugging Face directory of any BERT model: config.json, model.safetensors (`hf_state`,
    already in Hugging Face keys), vocab.txt and tokenizer_config.json."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(hf_config, indent=2) + "\n")
    state = {k: v.detach().contiguous() for k, v in hf_state.items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "vocab.txt").write_text(tokenizer.vocab_text())
    settings = tokenizer_config(tokenizer, max_len)
    (out / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    return out


def load_hf_bert(source: str, *, encoder_only: bool = False) -> LoadedBert:
    """A local Hugging Face BERT directory, or a hub name downloaded once (needs internet);
    `encoder_only` as in `read_hf_directory`."""
    path = Path(source).expanduser()
    if is_hf_directory(path):
        return read_hf_directory(path, encoder_only=encoder_only)
    if is_hub_name(source):
        return read_hf_directory(download(source), encoder_only=encoder_only)
    raise UserError(f"{source}: not a Hugging Face BERT directory (config.json and weights) or hub name")
