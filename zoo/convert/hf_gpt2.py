"""Hugging Face GPT-2 <-> zoo.models.gpt: state dicts, config.json, whole directories.

A directory holds `config.json` and `model.safetensors` (or `pytorch_model.bin`, read with
`weights_only=True` so no pickled code runs), beside the byte-level BPE files (`vocab.json`,
`merges.txt`) that zoo.data.bpe reads. What we write is what `GPT2LMHeadModel.save_pretrained`
would (the output projection tied to the token embeddings, stored once), with the tokenizer's
files from the tokenizer object itself: `from_pretrained` loads it with the same logits. Hub names
are downloaded through zoo.convert.hub.

The layouts differ in two ways only: Hugging Face keeps GPT-2's `Conv1D` (weights stored
(in, out), the transpose of nn.Linear's) and names the modules after the original TensorFlow code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch
from safetensors.torch import save_file
from torch import Tensor

from zoo.blocks.ffn import ACTIVATIONS
from zoo.config import UserError
from zoo.convert.hf_bert import (
    HF_COMMON_FIELDS,
    IRRELEVANT,
    MAPS,
    WEIGHT_FILES,
    HFKind,
    Only,
    check_hf_config,
    is_hf_directory,
    read_weights,
)
from zoo.convert.hub import is_hub_name, snapshot
from zoo.convert.keys import load_strict, rename
from zoo.models.gpt import GPT, INIT_STD, GPTModelConfig, build_gpt

if TYPE_CHECKING:
    import transformers

# Hugging Face GPT2LMHeadModel keys <-> zoo keys. The output projection (lm_head) is the token
# embeddings, tied: see _without_lm_head.
HF_TABLE = [
    ("transformer.wte.", "tokens."),
    ("transformer.wpe.", "positions."),
    ("transformer.h.{i}.ln_1.", "blocks.layers.{i}.self_attn_res.norm."),
    ("transformer.h.{i}.attn.c_attn.", "blocks.layers.{i}.self_attn.qkv_proj."),
    ("transformer.h.{i}.attn.c_proj.", "blocks.layers.{i}.self_attn.out_proj."),
    ("transformer.h.{i}.ln_2.", "blocks.layers.{i}.ffn_res.norm."),
    ("transformer.h.{i}.mlp.c_fc.", "blocks.layers.{i}.ffn.fc1."),
    ("transformer.h.{i}.mlp.c_proj.", "blocks.layers.{i}.ffn.fc2."),
    ("transformer.ln_f.", "blocks.final_norm."),
]
# Buffers of older checkpoints: the causal mask (tril of n_ctx x n_ctx) and its fill value.
HF_BUFFERS = ("transformer.h.*.attn.bias", "transformer.h.*.attn.masked_bias")
PREFIX, LM_HEAD, EMBEDDINGS = "transformer.", "lm_head.weight", "transformer.wte.weight"
# zoo's nn.Linear weights that Hugging Face stores as Conv1D, transposed: (in, out).
CONV1D = ("self_attn.qkv_proj.weight", "self_attn.out_proj.weight", "ffn.fc1.weight", "ffn.fc2.weight")


def _transpose_conv1d(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """zoo keys: every Conv1D weight transposed (its own inverse)."""
    return {k: v.t().contiguous() if k.endswith(CONV1D) else v for k, v in state.items()}


def state_from_hf(
    state: dict[str, Tensor], *, tied: bool = True, source: str = "checkpoint"
) -> dict[str, Tensor]:
    """A Hugging Face GPT2LMHeadModel (or bare GPT2Model: no "transformer." prefix) state dict
    in zoo `GPT` keys; the attention-mask buffers of older checkpoints are left out.

    Args:
        tied: the config's `tie_word_embeddings`. zoo's output projection is the token
            embeddings, so a stored lm_head loads only when it equals them.
        source: the file's name, for the error message.

    Raises:
        UserError: one line naming the keys zoo's GPT has no place for, or an lm_head it cannot tie.
    """
    state = {k if k.startswith((PREFIX, LM_HEAD)) else PREFIX + k: v for k, v in state.items()}
    state = _without_lm_head(state, tied, source)
    return _transpose_conv1d(rename(state, HF_TABLE, source=source, skip=HF_BUFFERS))


def _without_lm_head(state: dict[str, Tensor], tied: bool, source: str) -> dict[str, Tensor]:
    """The state without lm_head.weight, or a refusal when it is not the token embeddings."""
    if LM_HEAD not in state:
        if not tied:
            raise UserError(
                f"{source}: tie_word_embeddings=False and no {LM_HEAD}: transformers would start a "
                "random output projection, zoo's GPT would tie it to the token embeddings"
            )
        return state
    if EMBEDDINGS not in state or not torch.equal(state[LM_HEAD], state[EMBEDDINGS]):
        raise UserError(
            f"{source}: {LM_HEAD} differs from the token embeddings (tie_word_embeddings={tied}): "
            "zoo's GPT ties its output projection to them and cannot load an untied one"
        )
    return {k: v for k, v in state.items() if k != LM_HEAD}


def state_to_hf(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """A zoo `GPT` state dict in Hugging Face GPT2LMHeadModel keys. Like `save_pretrained`, it
    leaves out lm_head.weight, the tied copy of the token embeddings that loading re-ties."""
    return rename(_transpose_conv1d(state), HF_TABLE, reverse=True, source="zoo GPT")


# config.json's activation_function -> zoo's (zoo.blocks.ffn.ACTIVATIONS), and back.
ACTIVATIONS_FROM_HF = {
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu": "gelu",
    "relu": "relu",
}
ACTIVATIONS_TO_HF = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}

# Every field a Hugging Face GPT-2 config.json may hold (GPT2Config().to_dict() of transformers 5,
# plus what older versions and the hub's gpt2 / distilgpt2 configs wrote). Each one maps to the
# model (config_from_hf reads it), is irrelevant to what the loaded model computes, or loads with
# the values of `Only` alone; any other field or value refuses the load, naming it.
HF_CONFIG_FIELDS: dict[str, str | Only] = {
    # The model: GPTModelConfig and the vocabulary size.
    "vocab_size": MAPS,
    "n_positions": MAPS,
    "n_embd": MAPS,
    "n_layer": MAPS,
    "n_head": MAPS,
    "n_inner": MAPS,  # None = 4 D
    "resid_pdrop": MAPS,
    "attn_pdrop": MAPS,
    "layer_norm_epsilon": MAPS,
    "activation_function": Only(
        tuple(ACTIVATIONS_FROM_HF), f"zoo's GPT has {', '.join(ACTIVATIONS_FROM_HF)} only"
    ),
    # What zoo's GPT computes.
    "model_type": Only(("gpt2",), "zoo reads GPT-2 checkpoints only"),
    "scale_attn_weights": Only((True,), "unscaled attention scores; zoo scales them by 1/sqrt(head_dim)"),
    "scale_attn_by_inverse_layer_idx": Only(
        (False,), "scores also divided by the layer's index + 1 (Mistral); zoo's attention does not"
    ),
    "add_cross_attention": Only((False,), "cross-attention layers; zoo's GPT has none"),
    "is_encoder_decoder": Only((False,), "an encoder-decoder; zoo's GPT is decoder-only"),
    "pruned_heads": Only(({},), "pruned attention heads; zoo's GPT keeps every head"),
    # False loads only an lm_head that copies the embeddings (state_from_hf checks the weights).
    "tie_word_embeddings": Only((True, False), "a boolean"),
    # The same function: scores upcast to float32 under autocast, and only in the eager kernel;
    # the weights are read into float32.
    "reorder_and_upcast_attn": IRRELEVANT,
    # zoo's one `dropout` (resid_pdrop's) serves the embeddings too: training only.
    "embd_pdrop": IRRELEVANT,
    "n_ctx": IRRELEVANT,  # old transformers' causal-mask buffer size; n_positions is the context
    "use_cache": IRRELEVANT,  # generate()'s KV cache: the same outputs
    "output_past": IRRELEVANT,  # use_cache's old name
    "is_decoder": IRRELEVANT,  # GPT-2 is causal whatever it says (GPT2Model never reads it)
    "cross_attention_hidden_size": IRRELEVANT,  # with add_cross_attention only
    "tie_encoder_decoder": IRRELEVANT,  # with is_encoder_decoder only
    "pad_token_id": IRRELEVANT,  # GPT-2 has no padding token; generate() reads it
    # GPT2DoubleHeadsModel's multiple-choice head (its weights are refused by name).
    **dict.fromkeys(
        "summary_type summary_use_proj summary_activation summary_proj_to_labels "
        "summary_first_dropout".split(),
        IRRELEVANT,
    ),
    # OpenAI GPT's added special tokens, copied into the hub's gpt2-medium config; read by no GPT-2 code.
    "n_special": IRRELEVANT,
    "predict_special_tokens": IRRELEVANT,
    "_num_labels": IRRELEVANT,  # num_labels' old name (distilgpt2)
    **HF_COMMON_FIELDS,
}
GPT2 = HFKind("GPT-2", "gpt2", "GPT2", HF_CONFIG_FIELDS, "HF_CONFIG_FIELDS in zoo.convert.hf_gpt2")


def config_from_hf(hf: dict[str, Any], *, source: str = "config.json") -> tuple[GPTModelConfig, int]:
    """(model config, vocabulary size) of a Hugging Face GPT-2 `config.json`.

    Raises:
        UserError: for another kind of model, a variant this model does not have, or a field
            HF_CONFIG_FIELDS does not know (one line naming it).
    """
    check_hf_config(hf, source=source, kind=GPT2)
    try:
        cfg = GPTModelConfig(
            num_layers=hf["n_layer"],
            dim=hf["n_embd"],
            num_heads=hf["n_head"],
            ffn_dim=hf.get("n_inner") or 0,
            max_len=hf["n_positions"],
            dropout=hf.get("resid_pdrop", 0.1),
            attn_dropout=hf.get("attn_pdrop", 0.1),
            norm_eps=hf.get("layer_norm_epsilon", 1e-5),
            activation=ACTIVATIONS_FROM_HF[hf.get("activation_function", "gelu_new")],
        )
        return cfg, hf["vocab_size"]
    except KeyError as err:
        raise UserError(f"{source}: missing key {err.args[0]!r} of a GPT-2 config") from None


def config_to_hf(cfg: GPTModelConfig, vocab_size: int, *, eot_id: int) -> dict[str, Any]:
    """The `config.json` of `GPT2LMHeadModel` for this model; `eot_id` (the end-of-text token)
    is its BOS and EOS, as in GPT-2's.

    Raises:
        UserError: for a model Hugging Face's GPT-2 cannot hold (no biases, another activation).
    """
    cfg = cfg.resolved()
    if not cfg.bias:
        raise UserError("model.bias=False: Hugging Face's GPT-2 has biases in every linear layer")
    if cfg.activation not in ACTIVATIONS_TO_HF:
        raise UserError(f"model.activation={cfg.activation!r} has no Hugging Face GPT-2 equivalent")
    return {
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": vocab_size,
        "n_positions": cfg.max_len,
        "n_embd": cfg.dim,
        "n_layer": cfg.num_layers,
        "n_head": cfg.num_heads,
        "n_inner": cfg.ffn_dim or None,
        "activation_function": ACTIVATIONS_TO_HF[cfg.activation],
        "resid_pdrop": cfg.dropout,
        "embd_pdrop": cfg.dropout,
        "attn_pdrop": cfg.attn_dropout,
        "layer_norm_epsilon": cfg.norm_eps,
        "initializer_range": INIT_STD,
        "scale_attn_weights": True,
        "tie_word_embeddings": True,
        "bos_token_id": eot_id,
        "eos_token_id": eot_id,
    }


def config_of(model: GPT) -> GPTModelConfig:
    """The config that builds `model`'s architecture (from its modules: a model of any origin)."""
    layer = model.blocks.layers[0]
    attn = layer.self_attn
    activation = next(name for name, make in ACTIVATIONS.items() if repr(make()) == repr(layer.ffn.act))
    return GPTModelConfig(
        num_layers=model.num_layers,
        dim=attn.dim,
        num_heads=attn.num_heads,
        ffn_dim=layer.ffn.fc1.out_features,
        max_len=model.max_len,
        dropout=model.dropout.p,
        attn_dropout=attn.dropout,
        norm_eps=layer.ffn_res.norm.eps,
        activation=activation,
        bias=attn.qkv_proj.bias is not None,
    )


def hf_model_of(model: GPT) -> transformers.GPT2LMHeadModel:
    """Hugging Face's GPT2LMHeadModel holding `model`'s weights (float32, eval mode): the
    reference of the parity tests."""
    from transformers import GPT2Config, GPT2LMHeadModel

    hf_config = config_to_hf(config_of(model), model.vocab_size, eot_id=model.vocab_size - 1)
    hf = GPT2LMHeadModel(GPT2Config(**hf_config))
    state = state_to_hf({k: v.float() for k, v in model.state_dict().items()})
    hf.load_state_dict({**state, LM_HEAD: state[EMBEDDINGS]})  # strict: every key filled
    return hf.float().eval()


class HFTokenizerFiles(Protocol):
    """What `write_hf_directory` needs of a tokenizer (zoo.data.bpe.ByteBPETokenizer has it)."""

    eot_id: int  # the end-of-text token: GPT-2's BOS and EOS

    def save_hf_files(self, directory: Path, *, max_len: int) -> None: ...


HUB_FILES = [
    "config.json",
    "generation_config.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    *WEIGHT_FILES,
]


@dataclass
class LoadedGPT:
    """A Hugging Face GPT-2 ready to run: the model (eval mode), its config and vocabulary size,
    and the directory it came from (its vocab.json and merges.txt are the tokenizer's)."""

    model: GPT
    config: GPTModelConfig
    vocab_size: int
    directory: Path


def read_hf_directory(directory: str | Path) -> LoadedGPT:
    """A local Hugging Face GPT-2 checkpoint (GPT2LMHeadModel or GPT2Model weights).

    Raises:
        UserError: one line, for a config or weights zoo's GPT cannot represent.
    """
    directory = Path(directory)
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise UserError(f"{directory}: no config.json (not a Hugging Face model directory)")
    hf_config = json.loads(config_file.read_text())
    cfg, vocab_size = config_from_hf(hf_config, source=str(config_file))
    state, path = read_weights(directory)
    model = build_gpt(cfg, vocab_size)
    tied = hf_config.get("tie_word_embeddings", True)
    load_strict(model, state_from_hf(state, tied=tied, source=str(path)), source=str(path))
    return LoadedGPT(model.eval(), cfg, vocab_size, directory)


def download(repo_id: str) -> Path:
    """The hub snapshot of `repo_id` (config, tokenizer, weights) in the Hugging Face cache;
    needs internet the first time."""
    return snapshot(repo_id, HUB_FILES)


def load_hf_gpt2(source: str) -> LoadedGPT:
    """A local Hugging Face GPT-2 directory, or a hub name (gpt2, distilgpt2) downloaded once."""
    path = Path(source).expanduser()
    if is_hf_directory(path):
        return read_hf_directory(path)
    if is_hub_name(source):
        return read_hf_directory(download(source))
    raise UserError(f"{source}: not a Hugging Face GPT-2 directory (config.json and weights) or hub name")


def write_hf_directory(model: GPT, cfg: GPTModelConfig, tokenizer: HFTokenizerFiles, out: str | Path) -> Path:
    """Save as `save_pretrained` would: config.json, model.safetensors (the tied output
    projection stored once, as the token embeddings), generation_config.json (the end-of-text
    token as BOS and EOS), and the tokenizer's own files (`tokenizer.save_hf_files`).

    Args:
        cfg: the model's config (dropout and the rest that the weights do not tell).
        tokenizer: the model's (zoo.data.bpe.ByteBPETokenizer).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    eot_id = tokenizer.eot_id
    _write_json(out / "config.json", config_to_hf(cfg, model.vocab_size, eot_id=eot_id))
    _write_json(out / "generation_config.json", {"bos_token_id": eot_id, "eos_token_id": eot_id})
    state = {k: v.detach().float().contiguous() for k, v in state_to_hf(model.state_dict()).items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_hf_files(out, max_len=cfg.resolved().max_len)
    return out


def _write_json(path: Path, value: dict[str, Any]) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n")
