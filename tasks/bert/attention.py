"""python -m tasks.bert.attention RUN --text "A sentence." [--text_b "Another."] [--out FILE]

The self-attention weights of every layer and head of a trained BERT (a run, a checkpoint or
a Hugging Face directory) on one sentence or sentence pair, as a grid of heatmaps: rows are
layers, columns heads; in each map row i is where token i looks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch import Tensor  # noqa: E402

from tasks.bert.hf import LoadedBert, load_bert  # noqa: E402
from zoo.blocks import attention_maps  # noqa: E402
from zoo.cli import main_guard  # noqa: E402
from zoo.config import UserError, parse_cli  # noqa: E402
from zoo.train.options import CheckpointOptions


@dataclass
class AttentionConfig(CheckpointOptions):
    text: str = field(default="", metadata={"help": "segment A (required)"})
    text_b: str = field(default="", metadata={"help": "segment B ('' = a single segment)"})
    out: str = field(
        default="", metadata={"help": "PNG file ('' = RUN/figures/attention.png, or ./attention.png)"}
    )


def pair_inputs(loaded: LoadedBert, text: str, text_b: str = "") -> tuple[Tensor, Tensor, list[str]]:
    """ids (1, T), token types (1, T) and the tokens of [CLS] A [SEP] (B [SEP])."""
    tok = loaded.tokenizer
    a = [tok.cls_id, *tok.encode(text), tok.sep_id]
    b = [*tok.encode(text_b), tok.sep_id] if text_b else []
    if len(a) + len(b) > loaded.model.max_len:
        raise UserError(f"{len(a) + len(b)} tokens exceed the model's {loaded.model.max_len}")
    ids = torch.tensor([a + b])
    types = torch.tensor([[0] * len(a) + [1] * len(b)])
    return ids, types, tok.convert_ids_to_tokens(a + b)


@torch.no_grad()
def attention_weights(loaded: LoadedBert, ids: Tensor, types: Tensor) -> Tensor:
    """(layers, heads, T, T) attention weights of one sequence."""
    model = loaded.model.eval()
    with attention_maps(model.encoder) as maps:
        model(ids, types)
    return torch.stack([maps[f"layers.{i}.self_attn"][0][0] for i in range(len(model.encoder.layers))])


def plot_attention(weights: Tensor, tokens: list[str], path: Path, *, title: str) -> None:
    """A layers x heads grid of heatmaps, tokens on the axes of the first column and last row."""
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


@main_guard
def main(argv: list[str] | None = None) -> Path:
    args = parse_cli(
        AttentionConfig, argv, default_config=None, positional=("run",), description=__doc__.split("\n\n")[1]
    )
    if not args.text:
        raise UserError("give the sentence with --text (and a second one with --text_b)")
    loaded = load_bert(args.run, which=args.checkpoint)
    ids, types, tokens = pair_inputs(loaded, args.text, args.text_b)
    weights = attention_weights(loaded, ids, types)
    default = (loaded.run_dir / "figures" if loaded.run_dir else Path(".")) / "attention.png"
    out = Path(args.out) if args.out else default
    plot_attention(weights, tokens, out, title=f"BERT self-attention ({loaded.source.name})")
    print(f"wrote {out}")
    return out


if __name__ == "__main__":
    main()
