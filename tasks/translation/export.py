"""python -m tasks.translation.export RUN --format ctranslate2 OUT: a trained model for CTranslate2.

CTranslate2 is the inference engine deployers use for Transformer translation models. The export
writes its model directory (model.bin, config.json, the shared vocabulary) plus the run's
SentencePiece model (spm.model), so that

    translator = ctranslate2.Translator(OUT)
    pieces = sentencepiece.SentencePieceProcessor(model_file=f"{OUT}/spm.model").encode(text, out_type=str)
    translator.translate_batch([pieces], beam_size=4, length_penalty=0.6)

translates as `python -m tasks.translation.translate` does (the source EOS is added by the
engine, from the exported config). What maps onto what: post-norm or pre-norm residuals (with the
pre-norm stacks' final norms), LayerNorm or RMSNorm and its epsilon, ReLU or GELU, the position
table itself (sinusoidal or learned: written out, so no layout convention has to agree), the
sqrt(D) embedding scale, and the embeddings shared by source, target and output projection.
Restricted self-attention (model.window) has no CTranslate2 counterpart and is refused.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from tasks.translation.inference import TrainedModelOptions, load_translator
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.data.special import SPECIAL_IDS
from zoo.data.tokenizer import SentencePieceTokenizer
from zoo.models.encoder_decoder import Transformer

FORMATS = ("ctranslate2",)
QUANTIZATIONS = (
    "",
    "int8",
    "int8_float32",
    "int8_float16",
    "int8_bfloat16",
    "int16",
    "float16",
    "bfloat16",
    "float32",
)


@dataclass
class ExportOptions:
    run: str = field(
        default="", metadata={"help": "run directory of tasks.translation.train, or a checkpoint file"}
    )
    out: str = field(default="", metadata={"help": "output directory (must not exist unless --force)"})
    format: str = field(default="ctranslate2", metadata={"help": "ctranslate2"})
    checkpoint: str = field(
        default="best",
        metadata={"help": "best | last | averaged (python -m zoo.train.average RUN) | a checkpoint file"},
    )
    quantization: str = field(
        default="",
        metadata={
            "help": "CTranslate2 weight type stored on disk ('' = float32; int8, int8_float32, int16, "
            "float16, bfloat16, ...); the engine can still convert at load time"
        },
    )
    force: bool = field(default=False, metadata={"help": "replace an existing output directory"})


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
    """Token table and position table (SinusoidalPositions.table or LearnedPositions.weight)."""
    tokens_spec.weight = _array(embed.tokens.weight)
    positions = getattr(embed.positions, "table", None)
    spec.position_encodings.encodings = _array(positions if positions is not None else embed.positions.weight)
    spec.scale_embeddings = embed.tokens.scale != 1.0


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


def ctranslate2_spec(model: Transformer, pieces: list[str]):
    """The CTranslate2 TransformerSpec holding `model`'s weights, over the vocabulary `pieces`
    (id order; one joint vocabulary for source and target)."""
    import ctranslate2

    specs = ctranslate2.specs
    first = model.encoder.layers[0]
    if model.encoder.window is not None or model.decoder.window is not None:
        raise UserError("model.window (restricted self-attention) has no CTranslate2 counterpart")
    norm = first.ffn_res.norm
    activation = {nn.ReLU: specs.Activation.RELU, nn.GELU: specs.Activation.GELU}[type(first.ffn.act)]
    spec = specs.TransformerSpec.from_config(
        (len(model.encoder.layers), len(model.decoder.layers)),
        first.self_attn.num_heads,
        pre_norm=first.ffn_res.pre_norm,
        activation=activation,
        rms_norm=isinstance(norm, nn.RMSNorm),
    )
    encoder, decoder = spec.encoder, spec.decoder
    _embedding(encoder, encoder.embeddings[0], model.src_embed)  # one per source feature
    _embedding(decoder, decoder.embeddings, model.tgt_embed)
    for layer_spec, layer in zip(encoder.layer, model.encoder.layers):
        _attention(layer_spec.self_attention, layer.self_attn, layer.self_attn_res, cross=False)
        _ffn(layer_spec.ffn, layer)
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


def export_ctranslate2(
    model: Transformer,
    tokenizer: SentencePieceTokenizer,
    out: str | Path,
    *,
    quantization: str = "",
    force: bool = False,
) -> Path:
    """Write `model` and `tokenizer` as a CTranslate2 model directory `out`.

    Args:
        quantization: weight type stored on disk ('' = float32).
        force: replace an existing `out`.
    """
    out = Path(out)
    if out.exists() and not force:
        raise UserError(f"{out} exists; pass --force to replace it")
    spec = ctranslate2_spec(model, tokenizer.pieces(range(tokenizer.vocab_size)))
    spec.validate()
    spec.optimize(quantization=quantization or None)
    # Written beside, then moved: a failed export never leaves a half-written model at `out`.
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        spec.save(tmp)
        (Path(tmp) / "spm.model").write_bytes(tokenizer.model)
        if out.exists():
            shutil.rmtree(out)
        Path(tmp).rename(out)
    return out


@main_guard
def main(argv: list[str] | None = None) -> Path:
    options = parse_cli(
        ExportOptions, argv, default_config=None, description=__doc__, positional=("run", "out")
    )
    if options.format not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}, not {options.format!r}")
    if options.quantization not in QUANTIZATIONS:
        choices = ", ".join(q or "''" for q in QUANTIZATIONS)
        raise UserError(f"--quantization must be one of {choices}, not {options.quantization!r}")
    if not options.out:
        raise UserError(
            "name the output directory: python -m tasks.translation.export RUN --format ctranslate2 OUT"
        )
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        raise UserError(
            "--format ctranslate2 needs the ctranslate2 package: pip install ctranslate2"
        ) from None
    translator = load_translator(TrainedModelOptions(run=options.run, checkpoint=options.checkpoint))
    with torch.no_grad():
        out = export_ctranslate2(
            translator.model,
            translator.tokenizer,
            options.out,
            quantization=options.quantization,
            force=options.force,
        )
    print(f"{translator.trained.path} -> {out} (CTranslate2, {options.quantization or 'float32'})")
    return out


if __name__ == "__main__":
    main()
