"""Attention maps, one heatmap per layer and head: the cross-attention of an encoder-decoder's
output (a translation, a linearized tree), and the self-attention of one sequence (BERT, GPT).

Rows of the grid are layers (first at the top), columns are heads; in a cross-attention heatmap
the x axis is the source tokens and the y axis the target tokens being predicted.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.backend_bases import FigureCanvasBase  # noqa: E402
from torch import Tensor, nn  # noqa: E402

from zoo.blocks import attention_maps  # noqa: E402

DPI = 100
INCHES_PER_TOKEN = 0.22
MIN_PANEL_INCHES = 2.0
LABEL_INCHES = 1.0  # room for the tick labels on each panel


def image_formats() -> list[str]:
    """The file suffixes savefig writes, by the format they name (png, pdf, svg, ...)."""
    return sorted(FigureCanvasBase.get_supported_filetypes())


def figure_size(num_layers: int, num_heads: int, src_len: int, tgt_len: int) -> tuple[float, float]:
    """(width, height) in inches of the grid: panels sized by their token counts."""
    panel_w = max(MIN_PANEL_INCHES, src_len * INCHES_PER_TOKEN) + LABEL_INCHES
    panel_h = max(MIN_PANEL_INCHES, tgt_len * INCHES_PER_TOKEN) + LABEL_INCHES
    return num_heads * panel_w, num_layers * panel_h


@torch.no_grad()
def cross_attention_weights(model: nn.Module, src_ids: Tensor, hyp_ids: Tensor) -> Tensor:
    """(layers, heads, T, S) cross-attention weights of one teacher-forced decode.

    Args:
        model: an encoder-decoder in eval mode whose `decoder` holds its cross-attention modules,
            named `cross_attn` (zoo.models.encoder_decoder, zoo.models.recurrent_seq2seq).
        src_ids: (S,) source ids.
        hyp_ids: (T,) decoder input: BOS followed by the hypothesis.
    """
    with attention_maps(model.decoder) as maps:
        memory, memory_mask = model.encode(src_ids[None])
        model.decode(hyp_ids[None], memory, memory_mask)
    # A Transformer layer attends once for the whole target, a recurrent decoder once per step.
    layers = [calls for name, calls in maps.items() if name.split(".")[-1] == "cross_attn"]
    return torch.stack([torch.cat(calls, dim=2)[0] for calls in layers])


def plot_cross_attention(
    model: nn.Module,
    src_ids: Tensor,
    hyp_ids: Tensor,
    src_tokens: list[str],
    tgt_tokens: list[str],
    path: str | Path,
) -> Tensor:
    """Draw every decoder layer's and head's cross-attention for one sentence into a PNG.

    Args:
        model, src_ids, hyp_ids: as for `cross_attention_weights`.
        src_tokens: S labels of the x axis (the source pieces).
        tgt_tokens: T labels of the y axis: the token each decoder position predicts (the
            hypothesis, then EOS).
        path: the PNG to write.

    Returns:
        The (layers, heads, T, S) weights drawn.
    """
    weights = cross_attention_weights(model, src_ids, hyp_ids).float().cpu()
    layers, heads, tgt_len, src_len = weights.shape
    if (len(src_tokens), len(tgt_tokens)) != (src_len, tgt_len):
        raise ValueError(
            f"{len(src_tokens)} source and {len(tgt_tokens)} target labels for "
            f"{src_len} source and {tgt_len} target positions"
        )
    fig, axes = plt.subplots(
        layers, heads, squeeze=False, dpi=DPI, figsize=figure_size(layers, heads, src_len, tgt_len)
    )
    for (layer, head), ax in zip(((i, j) for i in range(layers) for j in range(heads)), axes.flat):
        ax.imshow(weights[layer, head].numpy(), cmap="viridis", vmin=0.0, aspect="auto")
        ax.set_title(f"layer {layer + 1} head {head + 1}", fontsize=8)
        ax.set_xticks(range(src_len), src_tokens if layer == layers - 1 else [], rotation=90, fontsize=7)
        ax.set_yticks(range(tgt_len), tgt_tokens if head == 0 else [], fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return weights


def plot_self_attention(weights: Tensor, tokens: list[str], path: Path, *, title: str) -> None:
    """Self-attention weights (layers, heads, T, T) as a layers x heads grid of heatmaps, tokens
    on the axes of the first column and last row."""
    layers, heads, n, _ = weights.shape
    cell = max(1.6, 0.16 * n)
    fig, axes = plt.subplots(layers, heads, figsize=(cell * heads + 1, cell * layers + 1), squeeze=False)
    for layer in range(layers):
        for head in range(heads):
            ax = axes[layer][head]
            ax.imshow(weights[layer, head].float().numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_xticks(range(n) if layer == layers - 1 else [])
            ax.set_yticks(range(n) if head == 0 else [])
            if layer == layers - 1:
                ax.set_xticklabels(tokens, rotation=90, fontsize=6)
                ax.set_xlabel(f"head {head + 1}")
            if head == 0:
                ax.set_yticklabels(tokens, fontsize=6)
                ax.set_ylabel(f"layer {layer + 1}")
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
