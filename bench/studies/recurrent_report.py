"""The recurrent baseline's study as files: the record (JSON), its tables with the commands
(Markdown), and a figure: validation BLEU against training FLOPs and against training minutes,
one line per model (PNG)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

from bench.output import write_study  # noqa: E402
from bench.studies.variations_report import described  # noqa: E402
from bench.tables import PCT, Column, markdown  # noqa: E402

TERA = 1e12
COLUMNS = [
    Column("model", "model"),
    Column("params (M)", "params_m", "{:.2f}"),
    Column("steps", "steps"),
    Column("train minutes", "train_minutes", "{:.1f}"),
    Column("train TFLOPs", "train_tflops", "{:.0f}"),
    Column("MFLOPs / target token", "mflops_per_token", "{:.1f}"),
    Column("val ppl", "ppl", PCT),
    Column("val BLEU greedy", "bleu.valid.greedy", PCT),
    Column("val BLEU beam 4", "bleu.valid.beam4", PCT),
    Column("test BLEU greedy", "bleu.test.greedy", PCT),
    Column("test BLEU beam 4", "bleu.test.beam4", PCT),
    Column("sentences/s greedy", "speed.greedy", "{:.1f}"),
    Column("sentences/s beam 4", "speed.beam4", "{:.1f}"),
]
COST_COLUMNS = [
    Column("cost", "cost"),
    Column("budget", "budget"),
    Column("Transformer", "transformer", PCT),
    Column("rnn", "rnn", PCT),
]
REACH_COLUMNS = [
    Column("cost", "cost"),
    Column("to reach val BLEU", "bleu", PCT),
    Column("Transformer", "transformer"),
    Column("rnn", "rnn"),
    Column("rnn / Transformer", "ratio", "{:.2f}"),
]
UNITS = {"flops": (TERA, "{:.0f} TFLOPs"), "minutes": (1.0, "{:.1f} min")}


def model_records(record: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for name, results in record["models"].items():
        out.append(
            {
                "model": name,
                "params_m": results["parameters"] / 1e6,
                "steps": results["steps"],
                "train_minutes": results["train_minutes"],
                "train_tflops": results["train_flops"] / TERA,
                "mflops_per_token": results["flops_per_target_token"] / 1e6,
                "ppl": results["ppl"],
                "bleu": results["bleu"],
                "speed": record["speed"][name],
            }
        )
    return out


def shown_cost(value: float | None, cost: str) -> str | None:
    scale, fmt = UNITS[cost]
    return None if value is None else fmt.format(value / scale)


def cost_records(record: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    """Rows of the equal-cost table and of the cost-to-reach table, one per cost."""
    equal, reach = [], []
    for cost in UNITS:
        same = record[f"equal_{cost}"]
        equal.append({**same, "cost": cost, "budget": shown_cost(same["budget"], cost)})
        needed = record[f"{cost}_to_reach"]
        both = needed["transformer"] and needed["rnn"]
        reach.append(
            {
                "cost": cost,
                "bleu": needed["bleu"],
                "transformer": shown_cost(needed["transformer"], cost),
                "rnn": shown_cost(needed["rnn"], cost),
                "ratio": needed["rnn"] / needed["transformer"] if both else None,
            }
        )
    return equal, reach


def markdown_report(record: dict[str, Any]) -> str:
    equal, reach = cost_records(record)
    speed = record["speed"]
    lines = [
        "# The recurrent baseline against the Transformer, Multi30k En->De",
        "",
        f"`{record['command']}` at commit `{record['commit']}`; report written on "
        f"{described(record['hardware'])}.",
        "",
        "Both models trained by the translation task's command with the same data, vocabulary "
        "(8,000 BPE), batches (4,096 tokens), label smoothing and loss; BLEU is sacreBLEU of the "
        "final weights on Multi30k val and test_2016_flickr. Training FLOPs: 6 per multiply-add "
        "of the forward's matrix products (2, and twice that backward), counted per target token "
        "over the training split's lengths, times the target tokens trained "
        "(bench/studies/flops.py states the formulas). Decoding speed: the first "
        f"{speed['sentences']} test sentences, {speed['threads']} thread, median of "
        f"{speed['repeats']} rounds timed in turns.",
        "",
        *markdown(model_records(record), COLUMNS),
        "",
        "Validation BLEU (greedy) at equal cost: each run's validation records, linear between "
        "them and from 0 at step 0, read at the cheaper run's total.",
        "",
        *markdown(equal, COST_COLUMNS),
        "",
        "The cost each model needed to reach the lower of the two final validation BLEUs:",
        "",
        *markdown(reach, REACH_COLUMNS),
        "",
        "## Commands",
        "",
        "```bash",
        *[results["command"] for results in record["models"].values()],
        "```",
        "",
        "## Machines",
        "",
        *[f"- {name} trained and measured on {r['hardware']}" for name, r in record["models"].items()],
        "",
    ]
    return "\n".join(lines)


def figure(record: dict[str, Any], path: Path) -> None:
    """Validation BLEU against training FLOPs (left) and minutes (right), both models."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    for ax, (cost, (scale, _)) in zip(axes, UNITS.items()):
        for name, results in record["models"].items():
            points = [(0.0, 0.0)] + [(p[cost] / scale, p["bleu"]) for p in results["curve"]]
            ax.plot(*zip(*points), marker="o", label=f"{name} ({results['steps']} steps)")
        ax.set_xlabel("training TFLOPs" if cost == "flops" else "minutes in training steps")
        ax.set_ylabel("validation sacreBLEU, greedy")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    fig.suptitle("Recurrent baseline (GRU + additive attention) against the Transformer, Multi30k En->De")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(record: dict[str, Any], out: Path, name: str) -> None:
    """NAME.json, NAME.md and NAME.png in `out` (bench.output.write_study)."""
    write_study(record, out, name, markdown_report(record), partial(figure, record))
