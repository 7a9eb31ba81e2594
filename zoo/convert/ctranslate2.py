"""zoo's encoder-decoder `Transformer` and decoder-only `GPT` as CTranslate2 model directories.

CTranslate2 is the inference engine deployers use for Transformer translation models and
language models. `write_ctranslate2` writes a Translator's model directory (model.bin,
config.json, the shared vocabulary) plus the SentencePiece model (spm.model), so that

    tokenizer = SentencePieceTokenizer.load(f"{OUT}/spm.model")
    pieces = tokenizer.pieces(tokenizer.encode(text))
    translator = ctranslate2.Translator(OUT)
    translator.translate_batch([pieces], beam_size=1, **search_options(tokenizer, len(pieces)))

translates as zoo's greedy search does (the source EOS is added by the engine, from the exported
config; beam search agrees too without a length penalty, whose formulas differ). The search
rules are options of the call, not of the model directory, and one differs by default: the
engine's `min_decoding_length=1` forbids EOS at the first step (as fairseq's min_len=1), where
zoo lets a hypothesis end at once (an empty translation, as Hugging Face's generate does with its
default min_length=0); `search_options` gives the arguments under which the two searches agree.

What maps onto what: post-norm or pre-norm residuals (with the pre-norm stacks' final norms),
LayerNorm or RMSNorm and its epsilon, ReLU or GELU, the position table itself (sinusoidal or
learned: written out, so no layout convention has to agree), the sqrt(D) embedding scale, and
the embeddings shared by source, target and output projection. Restricted self-attention
(model.window), a score other than the scaled dot product (model.attention_score) and query/key
heads narrower or wider than the values (model.key_dim) have no CTranslate2 counterpart and are
refused, as is the recurrent baseline (model.arch=rnn).

`write_ctranslate2_gpt` writes a Generator's directory for the language model (the same blocks,
with the learned position table, the final norm and the output projection tied to the token
embeddings), over the tokenizer's token strings, so that

    generator = ctranslate2.Generator(OUT)
    generator.generate_batch([tokens], max_length=N, include_prompt_in_result=False, end_token=[])

continues a prompt as zoo's greedy loop does for N tokens (sampling_topk=1 is the default;
end_token=[] never stops, end_token=EOT stops there). Two rules of the engine differ: in a batch
of prompts of several lengths it feeds the shortest length at once and the rest of each prompt as
forced steps, which the results hold and max_length counts (one prompt a call, or equal lengths,
avoid it); and a position past the exported table is a RuntimeError, as zoo's model refuses it.

The ctranslate2 package (an optional peer) is imported only when a spec is built.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from torch import Tensor, nn

from zoo.blocks import MultiHeadAttention
from zoo.config import UserError
from zoo.data.special import SPECIAL_IDS
from zoo.data.tokenizer import SentencePieceTokenizer
from zoo.models.encoder_decoder import Transformer
from zoo.models.gpt import GPT


def _array(t: Tensor):
    return t.detach().float().cpu().numpy()


def _linear(spec, layer: nn.Linear) -> None:
    spec.weight = _array(layer.weight)
    if layer.bias is not None:
        spec.bias = _array(layer.bias)


def _rows(spec, layer: nn.Linear, rows: slice) -> None:
    """A part of a fused projection: its output rows `rows` (q, or k and v)."""
    spec.weight = _array(layer.weight[rows])
    if layer.bias is not None:
        spec.bias = _array(layer.bias[rows])


def _norm(spec, norm: nn.Module) -> None:
    spec.gamma = _array(norm.weight)
    if getattr(norm, "bias", None) is not None:
        spec.beta = _array(norm.bias)


def _embedding(spec, tokens_spec, embed: nn.Module) -> None:
    """Token table and position table (SinusoidalPositions.table or LearnedPositions.weight) of
    a module with `tokens` and `positions` (a zoo Embeddings, or the GPT itself)."""
    tokens_spec.weight = _array(embed.tokens.weight)
    positions = getattr(embed.positions, "table", None)
    spec.position_encodings.encodings = _array(positions if positions is not None else embed.positions.weight)
    spec.scale_embeddings = getattr(embed.tokens, "scale", 1.0) != 1.0  # GPT's nn.Embedding: unscaled


def _attention(spec, attn: nn.Module, residual: nn.Module, *, cross: bool) -> None:
    """CTranslate2 keeps self-attention's q/k/v fused (linear[0]); cross-attention has q
    (linear[0]) and fused k/v (linear[1]), the row order of zoo's qkv_proj."""
    if cross:
        _rows(spec.linear[0], attn.qkv_proj, slice(0, attn.dim))
        _rows(spec.linear[1], attn.qkv_proj, slice(attn.dim, None))
    else:
        _linear(spec.linear[0], attn.qkv_proj)
    _linear(spec.linear[-1], attn.out_proj)
    _norm(spec.layer_norm, residual.norm)


def _ffn(spec, layer: nn.Module) -> None:
    _linear(spec.linear_0, layer.ffn.fc1)
    _linear(spec.linear_1, layer.ffn.fc2)
    _norm(spec.layer_norm, layer.ffn_res.norm)


def _layer(spec, layer: nn.Module) -> None:
    """A self-attention layer (an encoder's, or a decoder-only model's)."""
    _attention(spec.self_attention, layer.self_attn, layer.self_attn_res, cross=False)
    _ffn(spec.ffn, layer)


def _activation(specs, act: nn.Module):
    """The engine's name of a zoo.blocks.ffn.ACTIVATIONS module (GELU's tanh form is its own)."""
    if isinstance(act, nn.GELU):
        return specs.Activation.GELUTanh if act.approximate == "tanh" else specs.Activation.GELU
    return {nn.ReLU: specs.Activation.RELU}[type(act)]


def _ctranslate2():
    """The ctranslate2 package, or a one-line refusal saying how to install it."""
    try:
        import ctranslate2
    except ImportError:
        raise UserError(
            "--format ctranslate2 needs the ctranslate2 package: pip install ctranslate2"
        ) from None
    return ctranslate2


def _save(spec, output: Path, quantization: str | None) -> None:
    """Validate, convert the weights to `quantization` (None = float32) and write the directory."""
    spec.validate()
    spec.optimize(quantization=quantization or None)
    Path(output).mkdir(parents=True, exist_ok=True)
    spec.save(str(output))


def search_options(
    tokenizer: SentencePieceTokenizer, source_pieces: int, *, max_len_a: float = 1.0, max_len_b: int = 50
) -> dict[str, Any]:
    """Keyword arguments of `ctranslate2.Translator.translate_batch` under which the engine's
    search stops where zoo.decode's does, for a source of `source_pieces` pieces (its EOS not
    counted; the engine adds it):

    - `min_decoding_length=0`: zoo may choose EOS first (an empty output); the engine's default 1
      forbids it there and gives a sentence where zoo gives none;
    - `max_decoding_length`: zoo's limit, floor(a * |source with EOS| + b) tokens, EOS not
      counted in either;
    - `suppress_sequences` of BOS and padding (<s>, <pad>): zoo never generates them.

    The limit depends on the source, so sources of other lengths agree at the limit only when
    translated one call each. (zoo also stops before its position table ends: model.max_len - 1.)

    Args:
        tokenizer: the exported vocabulary (the directory's spm.model), for the special pieces.
        max_len_a, max_len_b: the limit's terms, as zoo.decode's options of the same names.
    """
    special = tokenizer.special
    return {
        "min_decoding_length": 0,
        "max_decoding_length": math.floor(max_len_a * (source_pieces + 1) + max_len_b),
        "suppress_sequences": [[piece] for piece in tokenizer.pieces([special.bos, special.pad])],
    }


def _refuse_unmapped(model: Transformer) -> None:
    """One line naming the config key of the first attention variant CTranslate2 lacks."""
    if model.encoder.window is not None or model.decoder.window is not None:
        raise UserError("model.window (restricted self-attention) has no CTranslate2 counterpart")
    for attn in (m for m in model.modules() if isinstance(m, MultiHeadAttention)):
        if attn.score != "scaled_dot":
            raise UserError(
                f"model.attention_score={attn.score} has no CTranslate2 counterpart (scaled_dot only)"
            )
        if attn.key_dim != attn.head_dim:
            raise UserError(
                f"model.key_dim={attn.key_dim} (queries and keys narrower or wider than the values' "
                f"{attn.head_dim}) has no CTranslate2 counterpart"
            )


def ctranslate2_spec(model: Transformer, pieces: list[str]):
    """The CTranslate2 TransformerSpec holding `model`'s weights, over the vocabulary `pieces`
    (id order; one joint vocabulary for source and target).

    Raises:
        UserError: without the ctranslate2 package, or for a model it cannot represent (see
            `_refuse_unmapped`).
    """
    if not isinstance(model, Transformer):  # the recurrent baseline (model.arch=rnn)
        raise UserError(f"model.arch=rnn ({type(model).__name__}) has no CTranslate2 counterpart")
    _refuse_unmapped(model)
    specs = _ctranslate2().specs
    first = model.encoder.layers[0]
    norm = first.ffn_res.norm
    spec = specs.TransformerSpec.from_config(
        (len(model.encoder.layers), len(model.decoder.layers)),
        first.self_attn.num_heads,
        pre_norm=first.ffn_res.pre_norm,
        activation=_activation(specs, first.ffn.act),
        rms_norm=isinstance(norm, nn.RMSNorm),
    )
    encoder, decoder = spec.encoder, spec.decoder
    _embedding(encoder, encoder.embeddings[0], model.src_embed)  # one per source feature
    _embedding(decoder, decoder.embeddings, model.tgt_embed)
    for layer_spec, layer in zip(encoder.layer, model.encoder.layers):
        _layer(layer_spec, layer)
    for layer_spec, layer in zip(decoder.layer, model.decoder.layers):
        _attention(layer_spec.self_attention, layer.self_attn, layer.self_attn_res, cross=False)
        _attention(layer_spec.attention, layer.cross_attn, layer.cross_attn_res, cross=True)
        _ffn(layer_spec.ffn, layer)
    for stack_spec, stack in ((encoder, model.encoder), (decoder, model.decoder)):
        if stack.final_norm is not None:
            _norm(stack_spec.layer_norm, stack.final_norm)
    _linear(decoder.projection, model.output)
    spec.config.layer_norm_epsilon = norm.eps
    spec.config.unk_token = pieces[SPECIAL_IDS.unk]
    spec.config.bos_token = spec.config.decoder_start_token = pieces[SPECIAL_IDS.bos]
    spec.config.eos_token = pieces[SPECIAL_IDS.eos]
    spec.config.add_source_eos = True  # zoo's sources end with EOS, as in training
    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)
    return spec


def write_ctranslate2(
    model: Transformer, tokenizer: SentencePieceTokenizer, output: Path, *, quantization: str = ""
) -> None:
    """Write `model` and `tokenizer` as a CTranslate2 model directory into `output` (created if
    absent; the files must not be there yet). Staging and moving into place, so that a failure
    leaves nothing half written, is the caller's (zoo.verbs' write_directory does it).

    Args:
        quantization: weight type stored on disk ('' = float32; int8, int16, float16, bfloat16, ...;
            the engine can still convert at load time).

    Raises:
        UserError: without the ctranslate2 package, or for a model CTranslate2 cannot represent
            (restricted self-attention, another attention score or key width).
    """
    output = Path(output)
    spec = ctranslate2_spec(model, tokenizer.pieces(range(tokenizer.vocab_size)))
    _save(spec, output, quantization)
    (output / "spm.model").write_bytes(tokenizer.model)


def ctranslate2_gpt_spec(model: GPT, tokens: list[str], *, eot_id: int):
    """The CTranslate2 TransformerDecoderModelSpec holding `model`'s weights, over the
    vocabulary `tokens` (the tokenizer's token strings in id order).

    Every zoo GPT maps (the activations, biases or none, any LayerNorm epsilon, which goes into
    the engine's config). Positions are rows of the exported table, each prompt counting from 0
    (as zoo's unpadded rows do); past model.max_len the engine raises a RuntimeError.

    Args:
        eot_id: the end-of-text token: the engine's BOS, EOS (its default end_token) and UNK.

    Raises:
        UserError: without the ctranslate2 package, or when `tokens` does not fit the model.
    """
    specs = _ctranslate2().specs
    if len(tokens) != model.vocab_size or not 0 <= eot_id < len(tokens):
        raise UserError(
            f"{len(tokens)} tokens (end of text {eot_id}) for a model of {model.vocab_size}: "
            "the vocabulary must be the tokenizer's, in id order"
        )
    first = model.blocks.layers[0]
    spec = specs.TransformerDecoderModelSpec.from_config(
        model.num_layers,
        first.self_attn.num_heads,
        pre_norm=True,
        activation=_activation(specs, first.ffn.act),
    )
    decoder = spec.decoder
    _embedding(decoder, decoder.embeddings, model)
    for layer_spec, layer in zip(decoder.layer, model.blocks.layers):
        _layer(layer_spec, layer)
    _norm(decoder.layer_norm, model.blocks.final_norm)
    decoder.projection.weight = _array(model.output_weight)  # tied: the engine stores it once
    spec.config.layer_norm_epsilon = first.ffn_res.norm.eps
    spec.config.unk_token = spec.config.bos_token = spec.config.eos_token = tokens[eot_id]
    spec.register_vocabulary(tokens)
    return spec


def write_ctranslate2_gpt(
    model: GPT, tokens: list[str], output: Path, *, eot_id: int, quantization: str | None = None
) -> None:
    """Write `model` as a CTranslate2 Generator directory into `output` (created if absent; the
    files must not be there yet; staging is the caller's, as for `write_ctranslate2`).

    Args:
        tokens: the tokenizer's token strings in id order (the engine's vocabulary).
        eot_id: the end-of-text token (see `ctranslate2_gpt_spec`).
        quantization: weight type stored on disk (None = float32; int8, float16, bfloat16, ...).

    Raises:
        UserError: without the ctranslate2 package, or when `tokens` does not fit the model.
    """
    _save(ctranslate2_gpt_spec(model, tokens, eot_id=eot_id), output, quantization)
