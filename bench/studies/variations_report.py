"""Table 3 in miniature as files: the record (JSON), the table as the paper prints it with each
row's commands (Markdown), and a figure: validation BLEU per row by group, and perplexity
against parameters (PNG)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from bench.output import write_study  # noqa: E402
from bench.tables import PCT, Column, markdown  # noqa: E402

COLUMNS = [
    Column("group", "group"),
    Column("row", "name"),
    Column("changes from the base", "changes"),
    Column("params (M)", "params_m", "{:.2f}"),
    Column("val ppl", "ppl", PCT),
    Column("BLEU greedy", "bleu_greedy", PCT),
    Column("BLEU beam 4", "bleu_beam4", PCT),
    Column("train minutes", "train_minutes", "{:.1f}"),
]
# What the paper concludes from each group (section 6.2 and, for the score functions, 3.2.1).
PAPER = {
    "A": "single-head attention is 0.9 BLEU worse than the best setting; quality also drops off "
    "with too many heads",
    "B": "reducing d_k hurts: compatibility is not easy to determine, a finer function than dot "
    "product may help",
    "C": "bigger models are better",
    "D": "dropout is very helpful in avoiding over-fitting; label smoothing hurts perplexity but "
    "improves BLEU",
    "E": "learned positional embeddings give nearly identical results to the sinusoids",
    "scores": "additive beats unscaled dot product for larger d_k; the 1/sqrt(d_k) scaling counteracts small "
    "softmax gradients, and dot product is much faster and more space-efficient",
}


def table_records(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat record per row: the changes (marked when the row is another's run) and its results."""
    out = []
    for row in record["rows"]:
        results = row["results"] or {}
        shared = f" (= {row['runs_as']})" if row["runs_as"] != row["name"] else ""
        params = results.get("parameters")
        out.append(
            {
                "group": row["group"],
                "name": row["name"],
                "changes": (row["changes"] or "-") + shared,
                "params_m": params / 1e6 if params else None,
                **{key: results.get(key) for key in ("ppl", "bleu_greedy", "bleu_beam4", "train_minutes")},
            }
        )
    return out


def markdown_report(record: dict[str, Any]) -> str:
    budget = record["budget"]
    lines = [
        "# Table 3 in miniature: variations on the Transformer, Multi30k En->De",
        "",
        f"`{record['command']}` at commit `{record['commit']}`; report written on "
        f"{described(record['hardware'])}.",
        "",
        f"Every row is the `multi30k` recipe at the study budget ({budget['max_steps']} steps, "
        f"threads {budget['threads']}: `{' '.join(budget['flags'])}`) with the changes shown. Base: "
        f"{record['base']} (the recipe's dropout 0.3, not the paper's 0.1). Measured on the validation split "
        "(Multi30k val) with the final weights: perplexity per target token (teacher-forced), "
        "sacreBLEU greedy and with beam 4; minutes spent in training steps. A row marked (= base) "
        "is the base's run; '-' is not measured yet.",
        "",
        *markdown(table_records(record), COLUMNS),
        "",
        "What the paper concludes:",
        "",
        *[f"- ({group}) {text}" for group, text in PAPER.items()],
        "",
        "## Commands",
        "",
        "Each row alone: its training, then beam 4 on the validation split.",
        "",
    ]
    for row in record["rows"]:
        if row["runs_as"] != row["name"]:
            continue
        lines += [
            f"{row['name']}{': ' + row['note'] if row['note'] else ''}",
            "",
            "```bash",
            row["command"],
            row["evaluate"],
            "```",
            "",
        ]
    measured_on = sorted({row["results"]["hardware"] for row in record["rows"] if row["results"]})
    lines += ["## Machines", "", *[f"- rows measured on {where}" for where in measured_on], ""]
    return "\n".join(lines)


def described(hardware: dict[str, Any]) -> str:
    where = hardware["gpu"] or f"{hardware['cpu']}, {hardware['cores']} cores"
    return f"{where}, torch {hardware['torch']}"


def figure(record: dict[str, Any], path: Path) -> bool:
    """BLEU (beam 4) of each run by group, the base as a line; perplexity against parameters.
    False (nothing drawn) when no run is measured."""
    rows = [r for r in table_records(record) if r["bleu_beam4"] is not None and "(=" not in r["changes"]]
    if not rows:
        return False
    fig, (bars, scatter) = plt.subplots(1, 2, figsize=(12, 0.3 * len(rows) + 2), dpi=100)
    groups = list(dict.fromkeys(r["group"] for r in rows))
    colors = {g: plt.get_cmap("tab10")(i) for i, g in enumerate(groups)}
    labels = [f"{r['group']}: {r['changes']}" if r["group"] != "base" else "base" for r in rows]
    bars.barh(range(len(rows)), [r["bleu_beam4"] for r in rows], color=[colors[r["group"]] for r in rows])
    bars.set_yticks(range(len(rows)), labels, fontsize=8)
    bars.invert_yaxis()
    base = next((r for r in rows if r["name"] == "base"), None)
    if base:
        bars.axvline(base["bleu_beam4"], color="black", linestyle="--", linewidth=1, label="base")
        bars.legend(loc="lower right")
    bars.set_xlabel("validation sacreBLEU, beam 4")
    for r in rows:
        if r["params_m"] and r["ppl"]:
            scatter.scatter(r["params_m"], r["ppl"], color=colors[r["group"]])
            scatter.annotate(
                r["name"], (r["params_m"], r["ppl"]), fontsize=7, xytext=(3, 3), textcoords="offset points"
            )
    sizes = [r["params_m"] for r in rows if r["params_m"] and r["ppl"]]
    if sizes and max(sizes) > 2 * min(sizes):  # rows (C) span widths: a log axis; else linear
        scatter.set_xscale("log")
        plain = FuncFormatter(lambda value, _: f"{value:g}")
        scatter.xaxis.set_major_formatter(plain)
        scatter.xaxis.set_minor_formatter(plain)
    else:
        scatter.ticklabel_format(axis="x", style="plain", useOffset=False)
    scatter.set_xlabel("parameters (millions)")
    scatter.set_ylabel("validation perplexity per target token")
    fig.suptitle(f"Table 3 in miniature: Multi30k En->De, {record['budget']['max_steps']} steps per row")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def write_report(record: dict[str, Any], out: Path, name: str) -> None:
    """NAME.json, NAME.md and NAME.png in `out` (bench.output.write_study)."""
    write_study(record, out, name, markdown_report(record), partial(figure, record))
