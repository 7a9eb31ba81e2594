"""Pictures: a tree drawn with matplotlib (nltk's drawing needs Tk), and the chart parser's span
scores for one sentence."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from nltk import Tree  # noqa: E402
from torch import Tensor  # noqa: E402


def _layout(tree: Tree | str, depth: int, bottom: int, leaves: list[float], out: list) -> tuple[float, int]:
    """Appends (x, depth, text, children's (x, depth)) per node, words on the bottom row;
    returns the node's (x, depth)."""
    if isinstance(tree, str):
        x = float(len(leaves))
        leaves.append(x)
        out.append((x, bottom, tree, []))
        return x, bottom
    children = [_layout(child, depth + 1, bottom, leaves, out) for child in tree]
    x = sum(c for c, _ in children) / len(children)
    out.append((x, depth, tree.label(), children))
    return x, depth


def plot_tree(tree: Tree, path: Path, *, title: str = "") -> Path:
    """Draw `tree` top-down into a PNG."""
    nodes: list = []
    depth = tree.height() - 1
    _layout(tree, 0, depth, [], nodes)
    width = len(tree.leaves())
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * width), 0.7 * (depth + 1) + 0.6))
    for x, d, text, children in nodes:
        for cx, cd in children:
            ax.plot([x, cx], [-d, -cd], color="0.6", lw=0.8, zorder=1)
        leaf = not children
        ax.text(
            x,
            -d,
            text,
            ha="center",
            va="center",
            fontsize=9,
            zorder=2,
            style="italic" if leaf else "normal",
            weight="normal" if leaf else "bold",
            bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none"),
        )
    ax.set_xlim(-0.7, width - 0.3)
    ax.set_ylim(-depth - 0.5, 0.5)
    ax.axis("off")
    return _save(fig, ax, path, title)


def _save(fig, ax, path: Path, title: str) -> Path:
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def plot_span_scores(
    scores: Tensor, words: list[str], labels: list[str], path: Path, *, title: str = ""
) -> Path:
    """Heat map of the best non-empty label score of every span (i, j) of one sentence, with the
    label written in the cells where it beats the empty label (score 0).

    Args:
        scores: (n+1, n+1, L) span scores with label 0 = empty.
    """
    n = len(words)
    best, label = scores[:, :, 1:].max(dim=-1)
    grid = best[:n, 1:].float().clone()  # row i = start word, column j-1 = last word
    for i in range(n):
        grid[i, :i] = float("nan")
    fig, ax = plt.subplots(figsize=(0.55 * n + 2, 0.5 * n + 1.5))
    image = ax.imshow(
        grid.numpy(),
        cmap="RdBu_r",
        vmin=-float(grid.nan_to_num().abs().max()),
        vmax=float(grid.nan_to_num().abs().max()),
    )
    for i in range(n):
        for j in range(i + 1, n + 1):
            if best[i, j] > 0:
                ax.text(j - 1, i, labels[int(label[i, j]) + 1], ha="center", va="center", fontsize=6)
    ax.set_xticks(range(n), words, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(n), words, fontsize=8)
    ax.set_xlabel("last word of the span")
    ax.set_ylabel("first word of the span")
    fig.colorbar(image, ax=ax, shrink=0.7, label="best label score (empty label = 0)")
    return _save(fig, ax, path, title)
