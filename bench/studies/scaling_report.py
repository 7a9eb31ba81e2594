"""The scaling study as files: a Markdown page with its tables and what they say, and two
figures (the softmax and the gradients against d_k; the cost of each score)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from bench.tables import Column, markdown  # noqa: E402
from zoo.blocks import SCORES  # noqa: E402

SATURATION_COLUMNS = [
    Column("d_k", "d_k"),
    Column("var(q·k)", "unscaled.variance", "{:.1f}"),
    Column("var(q·k/√d_k)", "scaled.variance", "{:.3f}"),
    Column("largest weight, unscaled", "unscaled.max_weight", "{:.3f}"),
    Column("scaled", "scaled.max_weight", "{:.3f}"),
    Column("entropy (nats), unscaled", "unscaled.entropy", "{:.3f}"),
    Column("scaled", "scaled.entropy", "{:.3f}"),
]
# Where the gradient is measured: the name in the tables and the key prefix in the record.
PLACES = (("scores", "grad_norm"), ("q", "query_grad_norm"), ("k", "key_grad_norm"))
GRADIENT_COLUMNS = [
    Column("d_k", "d_k"),
    *[
        column
        for place, _ in PLACES
        for column in (
            Column(f"at {place}, unscaled", f"{place}_unscaled", "{:.2e}"),
            Column("scaled", f"{place}_scaled", "{:.2e}"),
            Column("unscaled / scaled", f"{place}_ratio", "{:.3g}"),
        )
    ],
]
MB = 2**20


def cost_records(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat record per size: milliseconds and MB per score, additive's ratios to scaled_dot."""
    out = []
    for row in record["cost"]:
        seconds, peak = row["seconds"], row["peak_bytes"]
        out.append(
            {
                "T": row["T"],
                "d_k": row["d_k"],
                **{f"{s}_ms": seconds[s] * 1e3 for s in SCORES},
                **{f"{s}_mb": peak[s] / MB for s in SCORES},
                "time_ratio": seconds["additive"] / seconds["scaled_dot"],
                "memory_ratio": peak["additive"] / peak["scaled_dot"],
            }
        )
    return out


COST_COLUMNS = [
    Column("T", "T"),
    Column("d_k", "d_k"),
    *[Column(f"{s} ms", f"{s}_ms", "{:.2f}") for s in SCORES],
    Column("additive / scaled_dot time", "time_ratio", "{:.1f}x"),
    *[Column(f"{s} MB", f"{s}_mb", "{:.1f}") for s in SCORES],
    Column("additive / scaled_dot memory", "memory_ratio", "{:.1f}x"),
]


def _span(values: list[float], fmt: str) -> str:
    return f"{fmt.format(min(values))} to {fmt.format(max(values))}"


def gradient_records(rows: list[dict[str, Any]], statistic: str) -> list[dict[str, Any]]:
    """One flat record per d_k: the `statistic` (mean or median) of the per-row gradient norms at
    the scores, q and k, unscaled and scaled, and unscaled over scaled."""
    out = []
    for row in rows:
        record: dict[str, Any] = {"d_k": row["d_k"]}
        for place, key in PLACES:
            unscaled, scaled = row["unscaled"][f"{key}_{statistic}"], row["scaled"][f"{key}_{statistic}"]
            record |= {
                f"{place}_unscaled": unscaled,
                f"{place}_scaled": scaled,
                f"{place}_ratio": unscaled / scaled,
            }
        out.append(record)
    return out


def below_one(records: list[dict[str, Any]], place: str) -> str:
    """The d_k at which unscaled over scaled is under 1 at `place`, in words."""
    below = [r["d_k"] for r in records if r[f"{place}_ratio"] < 1]
    if not below:
        return "at no d_k"
    if below == [r["d_k"] for r in records if r["d_k"] >= below[0]]:
        return f"at d_k {below[0]}" + (" and above" if len(below) > 1 else " only")
    return "at d_k " + ", ".join(str(d_k) for d_k in below)


def _ratios(records: list[dict[str, Any]], place: str) -> str:
    return ", ".join(f"{r[f'{place}_ratio']:.3g} ({r['d_k']})" for r in records)


def saturation_reading(rows: list[dict[str, Any]], keys: int) -> list[str]:
    """What the saturation table says, in numbers taken from it."""
    ratios = [row["unscaled"]["variance"] / row["d_k"] for row in rows]
    small, large = rows[0]["unscaled"], rows[-1]["unscaled"]
    scaled = {key: [row["scaled"][key] for row in rows] for key in ("max_weight", "entropy")}
    return [
        f"- var(q·k) / d_k is {_span(ratios, '{:.3f}')} over d_k {rows[0]['d_k']} to {rows[-1]['d_k']}: "
        "the paper's variance d_k holds (the sample's own error is about 1%).",
        f"- Unscaled, the largest of {keys} weights grows from {small['max_weight']:.2f} to "
        f"{large['max_weight']:.2f} and the entropy falls from {small['entropy']:.2f} to "
        f"{large['entropy']:.2f} nats: the softmax goes one-hot. Scaled by 1/sqrt(d_k), the largest weight "
        f"stays at {_span(scaled['max_weight'], '{:.3f}')} and the entropy at "
        f"{_span(scaled['entropy'], '{:.2f}')} nats, whatever d_k.",
    ]


def gradient_reading(medians: list[dict[str, Any]], means: list[dict[str, Any]]) -> list[str]:
    """What the two gradient tables say, in numbers taken from them."""
    first, last, last_mean = medians[0], medians[-1], means[-1]
    drop = first["scores_unscaled"] / last["scores_unscaled"]

    def span(records: list[dict[str, Any]], key: str, fmt: str = "{:.3g}") -> str:
        return _span([r[key] for r in records], fmt)

    return [
        f"- At the scores, the median gradient unscaled falls {drop:.0f}-fold, from "
        f"{first['scores_unscaled']:.2e} (d_k {first['d_k']}) to {last['scores_unscaled']:.2e} "
        f"(d_k {last['d_k']}); scaled it stays at {span(medians, 'scores_scaled', '{:.3f}')}. "
        f"Unscaled over scaled (d_k in brackets): {_ratios(medians, 'scores')}, under 1 "
        f'{below_one(medians, "scores")}: the paper\'s "extremely small gradients", at the softmax.',
        "- The queries and keys get the scores' gradient through q·k, times 1/sqrt(d_k) where the "
        "scores are scaled (autograd through the scaled product, not a factor applied here), against "
        "keys and queries whose norms grow as sqrt(d_k). Scaled, the median stays at "
        f"{span(medians, 'q_scaled', '{:.3f}')} at q and {span(medians, 'k_scaled', '{:.3f}')} at k, "
        f"whatever d_k. Unscaled over scaled, the median at q is {_ratios(medians, 'q')}: under 1 "
        f"{below_one(medians, 'q')} (at k: {span(medians, 'k_ratio')}, under 1 {below_one(medians, 'k')}).",
        f"- Unscaled, the gradient at q is spread unevenly over the rows: at d_k {last['d_k']} its mean is "
        f"{last_mean['q_unscaled'] / last['q_unscaled']:.0f} times its median ({last_mean['q_unscaled']:.2f} "
        f"against {last['q_unscaled']:.3f}); scaled, {last_mean['q_scaled'] / last['q_scaled']:.2f} times. "
        f"By the mean, unscaled over scaled is {span(means, 'q_ratio')} at q "
        f"(under 1 {below_one(means, 'q')}), {span(means, 'k_ratio')} at k (under 1 {below_one(means, 'k')}) "
        f"and {span(means, 'scores_ratio')} at the scores (under 1 {below_one(means, 'scores')}).",
    ]


def cost_reading(records: list[dict[str, Any]]) -> list[str]:
    """What table (b) says: additive's ratios to the scaled dot product at each length, and the
    unscaled dot product's."""
    by_length = []
    for t in dict.fromkeys(r["T"] for r in records):
        time_ratios = [r["time_ratio"] for r in records if r["T"] == t]
        memory_ratios = [r["memory_ratio"] for r in records if r["T"] == t]
        by_length.append(
            f"{_span(time_ratios, '{:.1f}')} times the time and {_span(memory_ratios, '{:.1f}')} times "
            f"the peak memory at T = {t}"
        )
    dot_time = _span([r["dot_ms"] / r["scaled_dot_ms"] for r in records], "{:.2f}")
    dot_memory = _span([r["dot_mb"] / r["scaled_dot_mb"] for r in records], "{:.2f}")
    return [
        f"- Against the scaled dot product, additive attention takes {'; '.join(by_length)}. Its hidden "
        "layer tanh(q_i + k_j) holds B H T² d_k values (kept for the backward pass), where the fused "
        'dot-product kernel keeps nothing of size T². The paper: "similar in theoretical complexity, '
        'dot-product attention is much faster and more space-efficient in practice".',
        f"- The unscaled dot product runs the same kernel with another scale: {dot_time} times the "
        f"scaled one's time and {dot_memory} times its memory.",
        "- On a CPU shared with other work the time ratios move between runs (the memory counts do "
        "not): rerun the command before reading much into one ratio.",
    ]


def write_markdown(record: dict[str, Any], out: Path, name: str) -> Path:
    setup = record["setup"]
    rows, keys = record["softmax"], setup["keys"]
    costs = cost_records(record)
    medians, means = gradient_records(rows, "median"), gradient_records(rows, "mean")
    lines = [
        "# Dot-product against additive attention (the paper's section 3.2.1)",
        "",
        f"`{record['command']}`: {record['hardware']}, {setup['threads']} thread(s), "
        f"torch {record['torch']}, {record['seconds']:.0f} s, load average {record['load_average']:.1f} "
        "at the start.",
        "",
        "## (a) Why the dot product is scaled by 1/sqrt(d_k)",
        "",
        f"Queries and keys of independent N(0, 1) entries, {setup['rows']:,} queries each against "
        f"{keys} keys per d_k (seed {setup['seed']}, float64). The paper: q·k then has mean 0 "
        "and variance d_k. Largest weight and entropy are the softmax row's means (uniform over "
        f"{keys} keys: 1/{keys} = {1 / keys:.3f} and ln {keys} = {math.log(keys):.2f} nats) "
        f"({name}_softmax.png).",
        "",
        *markdown(rows, SATURATION_COLUMNS),
        "",
        *saturation_reading(rows, keys),
        "",
        "The gradients are per-row norms for loss = g · softmax(scores), g a random N(0, 1) upstream "
        "gradient on the weights (the same g unscaled and scaled, at every d_k): at the scores, "
        "d loss / d scores through the softmax; at q, d loss / d q (the query's d_k entries); at k, "
        "d loss / d k (the row's keys, all their entries), both by autograd through q·k, divided by "
        "sqrt(d_k) where scaled. What q and k get is what the projections W_Q and W_K learn from.",
        "",
        "Median over the rows:",
        "",
        *markdown(medians, GRADIENT_COLUMNS),
        "",
        "Mean over the rows:",
        "",
        *markdown(means, GRADIENT_COLUMNS),
        "",
        *gradient_reading(medians, means),
        "",
        "## (b) Time and memory of the three scores",
        "",
        f"zoo's MultiHeadAttention (self-attention, no mask) forward and backward at equal sizes: batch "
        f"{setup['batch']}, {setup['heads']} heads, d_v = d_k, D = {setup['heads']} d_k, fp32 on the CPU, "
        f"{setup['threads']} thread(s). Times: medians of {setup['repeats']} rounds taking turns "
        "(bench.timing.interleaved_medians). Memory: the peak of the bytes the ops allocate and have "
        "not yet freed (bench.layers.measure.peak_memory, a TorchDispatchMode that follows each output "
        "storage to its release; tracemalloc would not see torch's allocator), so a fused kernel's "
        f"internal scratch is not counted ({name}_cost.png).",
        "",
        *markdown(costs, COST_COLUMNS),
        "",
        *cost_reading(costs),
        "",
    ]
    path = out / f"{name}.md"
    path.write_text("\n".join(lines))
    return path


def plot(record: dict[str, Any], out: Path, name: str) -> list[Path]:
    softmax = _plot_softmax(record["softmax"], record["setup"]["keys"], out / f"{name}_softmax.png")
    return [softmax, _plot_cost(record, out / f"{name}_cost.png")]


def _plot_softmax(rows: list[dict[str, Any]], keys: int, path: Path) -> Path:
    d_k = [row["d_k"] for row in rows]
    panels = [
        ("variance", "var of the score", "log", d_k, "paper: d_k"),
        ("max_weight", "largest softmax weight", "linear", [1 / keys] * len(d_k), f"uniform (1/{keys})"),
        ("entropy", "softmax entropy (nats)", "linear", [math.log(keys)] * len(d_k), f"uniform (ln {keys})"),
        ("grad_norm_median", "gradient norm at the scores (median)", "log", None, ""),
        ("query_grad_norm_median", "gradient norm at q (median)", "log", None, ""),
        ("query_grad_norm_mean", "gradient norm at q (mean)", "log", None, ""),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.6))
    for ax, (key, label, yscale, reference, reference_label) in zip(axes.flat, panels, strict=True):
        for kind, marker in (("unscaled", "o"), ("scaled", "s")):
            ax.plot(d_k, [row[kind][key] for row in rows], marker=marker, label=f"q·k {kind}")
        if reference is not None:
            ax.plot(d_k, reference, "k--", linewidth=1, label=reference_label)
        ax.set(xscale="log", yscale=yscale, xlabel="d_k", ylabel=label)
        ax.set_xticks(d_k, [str(d) for d in d_k])
        ax.legend(fontsize=8)
    fig.suptitle(
        f"Unit-variance q and k: the score's variance, a softmax over {keys} keys and the gradient "
        "at the scores and at q, with and without 1/sqrt(d_k)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _plot_cost(record: dict[str, Any], path: Path) -> Path:
    rows = record["cost"]
    labels = [f"T={row['T']}\nd_k={row['d_k']}" for row in rows]
    x, width = np.arange(len(rows)), 0.27
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, (key, scale, unit) in zip(axes, (("seconds", 1e3, "ms"), ("peak_bytes", 1 / MB, "MB"))):
        for i, score in enumerate(SCORES):
            ax.bar(x + (i - 1) * width, [row[key][score] * scale for row in rows], width, label=score)
        ax.set(yscale="log", ylabel=f"forward + backward, {unit}", xticks=x)
        ax.set_xticklabels(labels)
        ax.legend(fontsize=8)
    axes[0].set_title("time (median)")
    axes[1].set_title("peak memory of the ops")
    setup = record["setup"]
    fig.suptitle(f"MultiHeadAttention per score: batch {setup['batch']}, {setup['heads']} heads, fp32, CPU")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
