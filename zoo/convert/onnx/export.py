"""Export zoo's models to ONNX with torch.onnx's dynamo exporter (torch.export underneath).

Every graph takes any batch size and any sequence length: the example inputs only trace the
model, and their batch and length axes are declared dynamic. Weights are exported in float32.

    export_translation  encoder.onnx (cross-attention keys/values computed once) and
                        decoder_step.onnx (one token; self-attention past in, present out)
    export_bert         model.onnx: a pretrained BERT's hidden states and pooled state, or a
                        fine-tuning head's logits (zoo.models.bert_heads)
    export_vit          model.onnx: images -> logits (the batch axis dynamic; the image size fixed)
    export_gpt          model.onnx: ids after a cached past -> logits and the present

Graph inputs and outputs per layer i: past_key.i, past_value.i, present_key.i, present_value.i,
cross_key.i, cross_value.i.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch
from torch import Tensor, nn

from zoo.blocks import SequenceEmbedding
from zoo.config import UserError
from zoo.convert.onnx.graphs import BertFeatures, GPTStep, TranslationEncoder, TranslationStep
from zoo.data.special import SPECIAL_IDS
from zoo.models.bert import Bert
from zoo.models.bert_heads import (
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from zoo.models.encoder_decoder import Transformer
from zoo.models.gpt import GPT
from zoo.models.vit import ViT

MODEL = "model.onnx"
ENCODER = "encoder.onnx"
DECODER_STEP = "decoder_step.onnx"
CONFIG = "config.json"

BertHead = BertForSequenceClassification | BertForTokenClassification | BertForQuestionAnswering

# Example sizes: none 0 or 1, which torch.export would take for constants.
BATCH, LENGTH, PAST = 2, 5, 3


def export_translation(model: Transformer, output: Path) -> None:
    """Write `model`'s encoder and decoder step as ONNX graphs into the directory `output`
    (created if absent), with config.json (the position table's length, where decoding stops).

    Raises:
        UserError: for a model the graphs do not represent (the recurrent baseline, a custom
            source embedding, restricted self-attention) or when the onnx packages are missing.
    """
    if not isinstance(model, Transformer) or not isinstance(model.src_embed, SequenceEmbedding):
        raise UserError("ONNX export takes the Transformer with token-id sources (not model.arch rnn)")
    if model.decoder.window is not None:
        raise UserError("model.window: restricted attention's blockwise kernel exports for one length only")
    output, layers = Path(output), len(model.decoder.layers)
    src = _ids(model.tgt_embed.tokens.num_embeddings, model)
    encoder = TranslationEncoder(model)
    with torch.no_grad():  # contiguous, as ONNX Runtime hands them over (a view's strides would be traced)
        _, mask, cross = encoder(src)
        cross = [(k.contiguous(), v.contiguous()) for k, v in cross]
    _export(
        encoder, (src,), output / ENCODER,
        inputs=["src"], outputs=["memory", "memory_mask", *layer_names("cross", layers)],
        dynamic=({0: "batch", 1: "source"},),
    )  # fmt: skip
    past = [(k[:, :, :PAST].clone(), v[:, :, :PAST].clone()) for k, v in cross]
    _export(
        TranslationStep(model), (src[:, :1], mask, cross, past), output / DECODER_STEP,
        inputs=["tokens", "memory_mask", *layer_names("cross", layers), *layer_names("past", layers)],
        outputs=["logits", *layer_names("present", layers)],
        dynamic=({0: "batch"}, {0: "batch", 1: "source"}, _kv_axes(layers, "source"),
                 _kv_axes(layers, "past")),
    )  # fmt: skip
    (output / CONFIG).write_text(json.dumps({"model": "translation", "max_len": model.max_len}) + "\n")


def export_gpt(model: GPT, output: Path) -> None:
    """Write `model` as model.onnx into `output`: ids (B, T) after P cached positions and
    past_key.i / past_value.i (B, H, P, Dh) -> logits (B, T, V) and present_key.i /
    present_value.i (B, H, P + T, Dh). With P = 0 it is the plain forward."""
    ids, layers = _ids(model.vocab_size, model), model.num_layers
    attn = model.blocks.layers[0].self_attn
    past = [
        tuple(torch.zeros(BATCH, attn.num_heads, PAST, attn.head_dim, device=ids.device) for _ in "kv")
        for _ in range(layers)
    ]
    _export(
        GPTStep(model), (ids, past), Path(output) / MODEL,
        inputs=["ids", *layer_names("past", layers)], outputs=["logits", *layer_names("present", layers)],
        dynamic=({0: "batch", 1: "tokens"}, _kv_axes(layers, "past")),
    )  # fmt: skip


def export_bert(model: Bert | BertHead, output: Path) -> None:
    """Write a BERT as model.onnx into `output`: input_ids, token_type_ids (B, T) and
    attention_mask (B, T) bool ->, for a pretrained `Bert`, hidden (B, T, D) and pooled (B, D);
    for a fine-tuning head (zoo.models.bert_heads), logits (the span head: start_logits and
    end_logits, (B, T) each)."""
    if isinstance(model, Bert):
        graph, names, vocab_size = BertFeatures(model), ["hidden", "pooled"], model.vocab_size
    else:
        spans = isinstance(model, BertForQuestionAnswering)
        graph, names = model, ["start_logits", "end_logits"] if spans else ["logits"]
        vocab_size = model.bert.vocab_size
    ids = _ids(vocab_size, model)
    mask = torch.ones_like(ids, dtype=torch.bool)
    axes = {0: "batch", 1: "tokens"}
    _export(
        graph, (ids, torch.zeros_like(ids), mask), Path(output) / MODEL,
        inputs=["input_ids", "token_type_ids", "attention_mask"], outputs=names, dynamic=(axes, axes, axes),
    )  # fmt: skip


def export_vit(model: ViT, output: Path) -> None:
    """Write `model` as model.onnx into `output`: images (B, C, H, W) in [0, 1] at the training
    size -> logits (B, K)."""
    size = model.grid * model.patch_size
    images = torch.rand(BATCH, model.patch_embed.in_channels, size, size, device=model.pixel_mean.device)
    _export(
        model, (images,), Path(output) / MODEL, inputs=["images"], outputs=["logits"], dynamic=({0: "batch"},)
    )


def _export(
    module: nn.Module, args: tuple, path: Path, *, inputs: list[str], outputs: list[str], dynamic: tuple
) -> None:
    _require_onnx()
    if any(m.training for m in module.modules() if m is not module):
        raise ValueError("export a model in eval mode (model.eval()): dropout would be traced")
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        # Naming one axis in several inputs is how they share it; the exporter warns about each.
        warnings.filterwarnings("ignore", message="# The axis name")
        torch.onnx.export(
            module.eval(), args, str(path), dynamo=True, input_names=inputs, output_names=outputs,
            dynamic_shapes=dynamic, verbose=False,
        )  # fmt: skip


def _require_onnx() -> None:
    """A one-line refusal, saying how to install them, when the exporter's packages are missing."""
    try:
        import onnx  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError:
        raise UserError(
            '--format onnx needs the onnx and onnxscript packages: pip install "zoo[onnx]"'
        ) from None


def layer_names(kind: str, num_layers: int) -> list[str]:
    """The graph names of per-layer keys and values: {kind}_key.i, {kind}_value.i for each layer i
    (kind: past, present or cross)."""
    return [f"{kind}_{part}.{i}" for i in range(num_layers) for part in ("key", "value")]


def _kv_axes(num_layers: int, length: str) -> list[tuple[dict[int, str], dict[int, str]]]:
    """The dynamic axes of per-layer keys and values (B, H, `length`, ..)."""
    axes = {0: "batch", 2: length}
    return [(axes, axes)] * num_layers


def _ids(vocab_size: int, model: nn.Module) -> Tensor:
    """(BATCH, LENGTH) ids that are not special ids, on `model`'s device (values are not traced)."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(SPECIAL_IDS.reserved, vocab_size, (BATCH, LENGTH), generator=generator)
    return ids.to(next(model.parameters()).device)
