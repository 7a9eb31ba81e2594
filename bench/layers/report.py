"""Turn the raw measurements of `bench.layers` into fits, a Markdown table and log-log plots."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend must be chosen first)
import numpy as np  # noqa: E402

from bench.layers.measure import RECURRENT, crossover, fit_exponent  # noqa: E402

# name -> (row label, complexity per layer, sequential operations, maximum path length): the
# paper's Table 1, and for rows it only discusses in the text (contiguous and separable
# convolutions, section 4) the figures given there.
PAPER = {
    "attention": ("Self-Attention", "O(n²·d)", "O(1)", "O(1)"),
    "local_attention": ("Self-Attention (restricted), r = k", "O(r·n·d)", "O(1)", "O(n/r)"),
    "rnn": ("Recurrent (tanh RNN)", "O(n·d²)", "O(n)", "O(n)"),
    "gru": ("Recurrent (GRU)", "O(n·d²)", "O(n)", "O(n)"),
    "lstm": ("Recurrent (LSTM)", "O(n·d²)", "O(n)", "O(n)"),
    "conv": ("Convolutional, contiguous", "O(k·n·d²)", "O(1)", "O(n/k) (text)"),
    "dilated_conv": ("Convolutional, dilated", "O(k·n·d²)", "O(1)", "O(log_k(n))"),
    "separable_conv": ("Convolutional, separable", "O(k·n·d + n·d²) (text)", "O(1)", "O(n/k) (text)"),
}
TERMS = ("n·d", "n·d²", "n²·d")
COMMANDS = [
    "```bash",
    "python -m bench.layers          # quick grid, under a minute on 2 busy CPU cores",
    "python -m bench.layers --full   # larger grid, about 4 minutes",
    "python -m pytest bench/test_layers_speed.py --benchmark-enable   # micro-benchmarks",
    "python -m pytest tests/bench tests/zoo/blocks/test_mixers.py "
    "tests/zoo/blocks/test_local_attention.py   # the checks",
    "```",
    "",
]


def _fit_terms(lengths: list[int], dims: list[int], counts: list[list[int]]) -> dict[str, float]:
    """FLOPs = a n d + b n d^2 + c n^2 d, least squares in relative error over the grid."""
    rows, target = [], []
    for dim, row in zip(dims, counts):
        for n, count in zip(lengths, row):
            rows.append([n * dim / count, n * dim * dim / count, n * n * dim / count])
            target.append(1.0)
    coef = np.linalg.lstsq(np.asarray(rows), np.asarray(target), rcond=None)[0]
    return {term: round(float(c), 3) for term, c in zip(TERMS, coef)}


def _crossover(lengths: list[int], attention: list[float], recurrent: list[float]) -> dict:
    """Where attention stops being cheaper than the recurrent layer."""
    if attention[0] >= recurrent[0]:
        return {"n": None, "note": "attention dearer at every n"}
    at = crossover(lengths, attention, recurrent)
    if at is None:
        return {"n": None, "note": f"attention cheaper up to n = {lengths[-1]}"}
    return {"n": round(at, 1), "note": ""}


def summarize(results: dict) -> dict:
    """Exponents, FLOP formulas and crossovers from the raw measurements."""
    cfg = results["config"]
    lengths, dims = cfg["flop_lengths"], cfg["flop_dims"]
    seq_lengths = cfg["sequential_lengths"]
    layers = {}
    for name, flops in results["flops"].items():
        counted = flops["counted"]
        ops = results["sequential_ops"][name]
        layers[name] = {
            "flops_equal_formula": counted == flops["analytic"],
            # Slopes over the three largest values of one axis at the smallest (n: d) or
            # largest (d: n) value of the other: the regime n >> d of the paper's leading terms.
            "flops_exponent_n": round(fit_exponent(lengths[-3:], counted[0][-3:]), 3),
            "flops_exponent_d": round(fit_exponent(dims[-3:], [r[-1] for r in counted[-3:]]), 3),
            "flops_terms": _fit_terms(lengths, dims, counted),
            "sequential_exponent_n": round(fit_exponent(seq_lengths, ops), 3),
            "sequential_ops_per_token": round((ops[-1] - ops[0]) / (seq_lengths[-1] - seq_lengths[0]), 3),
        }
    flops_cross = {
        name: {
            str(dim): _crossover(
                lengths, results["flops"]["attention"]["counted"][i], results["flops"][name]["counted"][i]
            )
            for i, dim in enumerate(dims)
        }
        for name in RECURRENT
    }
    time_cross = {
        name: {
            dim: _crossover(cfg["time_lengths"], timings["attention"]["seconds"], timings[name]["seconds"])
            for dim, timings in results["time_memory"].items()
        }
        for name in RECURRENT
    }
    return {"layers": layers, "crossover_flops": flops_cross, "crossover_time": time_cross}


def _formula(terms: dict[str, float]) -> str:
    parts = [f"{c:g}·{t}" for t, c in terms.items() if abs(c) > 1e-3]
    return " + ".join(parts) if parts else "0"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table1(results: dict) -> list[str]:
    cfg, summary = results["config"], results["summary"]["layers"]
    lengths, dims = cfg["flop_lengths"], cfg["flop_dims"]
    seq, paths = cfg["sequential_lengths"], cfg["path_lengths"]
    lines = [
        _row(
            [
                "Layer type",
                "Complexity per layer (paper)",
                "FLOPs counted, fitted",
                f"exp. n (n = {lengths[-3]}..{lengths[-1]}, d = {dims[0]})",
                f"exp. d (d = {dims[-3]}..{dims[-1]}, n = {lengths[-1]})",
                "Sequential ops (paper)",
                f"Sequential ops measured, n = {', '.join(map(str, seq))}",
                "exp. n",
                "Max path length (paper)",
                f"Path length measured, n = {', '.join(map(str, paths))}: causal; non-causal",
                "= formula",
            ]
        ),
        _row(["---"] * 11),
    ]
    for name, (label, complexity, sequential, path) in PAPER.items():
        s = summary[name]
        causal = results["path_length"]["causal"][name]
        bidir = results["path_length"]["non_causal"][name]
        agrees = causal["measured"] == causal["formula"] and bidir["measured"] == bidir["formula"]
        lines.append(
            _row(
                [
                    f"{label} (`{name}`)",
                    complexity,
                    _formula(s["flops_terms"]) + ("" if s["flops_equal_formula"] else " (≠ formula!)"),
                    f"{s['flops_exponent_n']:.2f}",
                    f"{s['flops_exponent_d']:.2f}",
                    sequential,
                    ", ".join(map(str, results["sequential_ops"][name]))
                    + f" (+{s['sequential_ops_per_token']:g} per token)",
                    f"{s['sequential_exponent_n']:.2f}",
                    path,
                    f"{', '.join(map(str, causal['measured']))}; {', '.join(map(str, bidir['measured']))}",
                    "yes" if agrees else "**no**",
                ]
            )
        )
    return lines


def _crossover_lines(results: dict) -> list[str]:
    summary = results["summary"]
    flops, times = summary["crossover_flops"], summary["crossover_time"]
    dims = list(next(iter(flops.values())))
    time_dims = list(next(iter(times.values())))
    lines = [
        _row(
            ["Recurrent layer"]
            + [f"FLOPs, d = {d}" for d in dims]
            + [f"wall time, d = {d}" for d in time_dims]
        ),
        _row(["---"] * (1 + len(dims) + len(time_dims))),
    ]
    for name in RECURRENT:
        lines.append(
            _row(
                [f"`{name}`"]
                + [_cross_text(flops[name][d]) for d in dims]
                + [_cross_text(times[name][d]) for d in time_dims]
            )
        )
    return lines


def _time_lines(results: dict) -> list[str]:
    cfg = results["config"]
    lines = []
    for dim, timings in results["time_memory"].items():
        lines += [
            f"d = {dim}, forward + backward, best of {cfg['repeats']}: milliseconds / "
            "peak MB of tensors allocated",
            "",
            _row(["Layer"] + [f"n = {n}" for n in cfg["time_lengths"]]),
            _row(["---"] * (1 + len(cfg["time_lengths"]))),
        ]
        for name, m in timings.items():
            lines.append(
                _row(
                    [f"`{name}`"]
                    + [f"{s * 1e3:.2f} / {b / 2**20:.2f}" for s, b in zip(m["seconds"], m["peak_bytes"])]
                )
            )
        lines.append("")
    return lines


def markdown(results: dict) -> str:
    cfg = results["config"]
    command = "python -m bench.layers" + (" --full" if cfg["mode"] == "full" else "")
    lines = [
        "# Layer types: the paper's Table 1, measured",
        "",
        f"Generated by `{command}` ({cfg['mode']} grid) with torch {cfg['torch']} on "
        f"{cfg['machine']}, {cfg['threads']} thread(s); causal layers, batch {cfg['batch']}, "
        f"kernel size k = {cfg['kernel_size']} (restricted attention: the same neighbourhood, "
        f"r = k). Raw numbers: `layers.json`. How each column is measured and where it differs "
        "from the paper: docs/benchmarks.md.",
        "",
        *_table1(results),
        "",
        "FLOPs are the forward pass as `torch.utils.flop_counter` counts it (2 per multiply-add; "
        "recurrent layers counted on their explicit per-step loop); every count equals the "
        "analytic formula. The fitted formula is a least-squares fit of the counts over the "
        "whole grid on n·d, n·d² and n²·d; the exponents are log-log slopes along one axis.",
        "",
        "## Where self-attention stops being cheaper than recurrence",
        "",
        *_crossover_lines(results),
        "",
        "## Wall time and memory against n",
        "",
        *_time_lines(results),
        "![FLOPs](layers_flops.png)",
        "",
        "![Time and memory](layers_time_memory.png)",
        "",
        "![Sequential operations and path length](layers_sequential_path.png)",
        "",
        "## Commands",
        "",
        *COMMANDS,
    ]
    return "\n".join(lines)


def _compact_table(results: dict) -> list[str]:
    """The paper's three columns beside the measured ones, one row per mixer (README)."""
    cfg, layers = results["config"], results["summary"]["layers"]
    seq, n_path = cfg["sequential_lengths"], cfg["path_lengths"][-1]
    lines = [
        _row(
            [
                "Layer type",
                "Complexity (paper)",
                "FLOPs counted",
                "Sequential (paper)",
                f"Sequential ops, n = {seq[0]} → {seq[-1]}",
                "Path (paper)",
                f"Path, n = {n_path}: causal / non-causal",
            ]
        ),
        _row(["---"] * 7),
    ]
    for name, (label, complexity, sequential, path) in PAPER.items():
        ops = results["sequential_ops"][name]
        causal, non_causal = (
            results["path_length"][key][name]["measured"][-1] for key in ("causal", "non_causal")
        )
        lines.append(
            _row(
                [
                    label,
                    complexity,
                    _formula(layers[name]["flops_terms"]),
                    sequential,
                    f"{ops[0]} → {ops[-1]}",
                    path,
                    f"{causal} / {non_causal}",
                ]
            )
        )
    return lines


def _cross_text(entry: dict) -> str:
    return f"n ≈ {entry['n']:.0f}" if entry["n"] is not None else entry["note"]


MARKERS = dict(zip(PAPER, "osv^D<x+"))


def _lines(
    ax: plt.Axes, xs: list[int], series: dict[str, list[float]], *, title: str, xlabel: str, ylabel: str
) -> None:
    for name, ys in series.items():
        style = "-" if "attention" in name else "--" if name in RECURRENT else ":"
        ax.plot(xs, ys, style, marker=MARKERS[name], markersize=5, fillstyle="none", label=name)
    ax.set(xscale="log", yscale="log", title=title, xlabel=xlabel, ylabel=ylabel)
    ax.set_xticks(xs, [str(x) for x in xs], minor=False)
    ax.set_xticks([], minor=True)
    ax.grid(True, which="both", alpha=0.3)


def _legend(fig: plt.Figure, ax: plt.Axes) -> None:
    """One legend for the figure, outside the axes (identical curves overlap; see markers)."""
    fig.legend(*ax.get_legend_handles_labels(), loc="center right", fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.86, 1))


def plot(results: dict, out: Path) -> list[Path]:
    """Write the three log-log figures; return their paths."""
    cfg = results["config"]
    lengths, dims = cfg["flop_lengths"], cfg["flop_dims"]
    mid = len(dims) // 2
    paths = []

    fig, ax = plt.subplots(figsize=(8.5, 5))
    _lines(
        ax,
        lengths,
        {n: f["counted"][mid] for n, f in results["flops"].items()},
        title=f"Forward FLOPs per layer, d = {dims[mid]}",
        xlabel="sequence length n",
        ylabel="FLOPs",
    )
    ax.axvline(dims[mid], color="grey", lw=0.8)
    ax.text(dims[mid], ax.get_ylim()[1], " n = d", va="top", color="grey")
    _legend(fig, ax)
    paths.append(_save(fig, out / "layers_flops.png"))

    dim = next(iter(results["time_memory"]))
    timings = results["time_memory"][dim]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13.5, 5))
    _lines(
        left,
        cfg["time_lengths"],
        {n: [s * 1e3 for s in m["seconds"]] for n, m in timings.items()},
        title=f"Forward + backward time, d = {dim}, {cfg['threads']} CPU thread(s)",
        xlabel="sequence length n",
        ylabel="milliseconds",
    )
    _lines(
        right,
        cfg["time_lengths"],
        {n: [b / 2**20 for b in m["peak_bytes"]] for n, m in timings.items()},
        title=f"Peak memory of tensors, forward + backward, d = {dim}",
        xlabel="sequence length n",
        ylabel="MiB",
    )
    _legend(fig, left)
    paths.append(_save(fig, out / "layers_time_memory.png"))

    fig, (left, right) = plt.subplots(1, 2, figsize=(13.5, 5))
    _lines(
        left,
        cfg["sequential_lengths"],
        results["sequential_ops"],
        title="Sequential operations (longest op chain), forward",
        xlabel="sequence length n",
        ylabel="ops on the longest chain",
    )
    _lines(
        right,
        cfg["path_lengths"],
        {n: p["measured"] for n, p in results["path_length"]["causal"].items()},
        title=f"Maximum path length, causal, k = r = {cfg['kernel_size']}",
        xlabel="sequence length n",
        ylabel="layers (recurrent: steps)",
    )
    right.set_yticks([1, 2, 4, 8, 16, 32], ["1", "2", "4", "8", "16", "32"])
    _legend(fig, left)
    paths.append(_save(fig, out / "layers_sequential_path.png"))
    return paths


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
