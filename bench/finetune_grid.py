"""A fine-tuning grid read back and its run chosen on the dev split, as Turc et al. chose the small
BERTs' GLUE runs: each run's best dev score (the checkpoint `best.pt` holds), the run with the
highest, and beside each the test score its `best.pt` reached (`zoo evaluate ... --split test
--json` wrote RUN/eval_test.json; the test split chooses nothing).

    python -m bench.finetune_grid runs/sst2-grid/* [--metric score] [--out bench/results/DIR]

Writes finetune_grid.{json,md} into --out, and finetune_grid.png (each run's test score against
its dev score, the chosen one marked) once every run has a test score.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import yaml

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

from bench.output import add_out_option
from bench.tables import Column
from bench.tables import markdown as table
from zoo.train.metrics_log import read_metrics

COLUMNS = (
    Column("run", "run"),
    Column("batch", "batch"),
    Column("lr", "lr"),
    Column("steps", "steps"),
    Column("best dev", "dev", "{:.2f}"),
    Column("at step", "dev_step"),
    Column("test of best.pt", "test", "{:.2f}"),
    Column("chosen", "chosen"),
)


def grid_row(run: Path, metric: str) -> dict:
    """One run's settings, its best dev score and step, and its test score where evaluated."""
    config = yaml.safe_load((run / "config.yaml").read_text())
    dev = read_metrics(run, "valid")
    if not dev:
        raise SystemExit(f"{run}/metrics.jsonl: no dev (valid) records")
    steps = config["train"]["max_steps"]
    if dev[-1]["step"] < steps:
        raise SystemExit(f"{run}: unfinished (last dev score at step {dev[-1]['step']} of {steps})")
    best = max(dev, key=lambda r: r[metric])  # the first of equals, as the runner keeps best.pt
    test_file = run / "eval_test.json"
    test = json.loads(test_file.read_text())[metric] if test_file.is_file() else None
    return {
        "run": str(run),
        "batch": config["data"]["batch_size"],
        "lr": config["optim"]["lr"],
        "steps": steps,
        "dev": best[metric],
        "dev_step": best["step"],
        "test": test,
    }


def choose(rows: list[dict]) -> list[dict]:
    """The rows with the one of the highest dev score marked chosen (the first of equals)."""
    chosen = max(range(len(rows)), key=lambda i: rows[i]["dev"])
    return [{**row, "chosen": "yes" if i == chosen else ""} for i, row in enumerate(rows)]


def plot(rows: list[dict], metric: str, path: Path) -> None:
    """Test against dev, one point per run labelled by its batch size and rate, the chosen run
    filled: whether the dev split ranks the runs as the test split does."""
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for row in rows:
        chosen = row["chosen"] == "yes"
        ax.scatter(row["dev"], row["test"], s=40, color="C3" if chosen else "C0", zorder=3)
        label = f"{row['batch']}, {row['lr']:g}" + (" (chosen)" if chosen else "")
        ax.annotate(label, (row["dev"], row["test"]), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel(f"best dev {metric} (chooses)")
    ax.set_ylabel(f"test {metric} of that checkpoint")
    ax.set_title("runs labelled batch size, learning rate", fontsize=9)
    ax.margins(x=0.2, y=0.1)  # room for the labels right of the points
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", type=Path, help="the grid's run directories")
    parser.add_argument(
        "--metric", default="score", help="the dev metric that chooses (the recipe's best_metric)"
    )
    add_out_option(parser)
    args = parser.parse_args()
    runs = [run for run in args.runs if (run / "config.yaml").is_file()]
    rows = choose([grid_row(run, args.metric) for run in sorted(runs)])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "finetune_grid.json").write_text(
        json.dumps({"metric": args.metric, "rows": rows}, indent=2) + "\n"
    )
    text = "\n".join(table(rows, COLUMNS)) + "\n"
    (args.out / "finetune_grid.md").write_text(text)
    if all(row["test"] is not None for row in rows):
        plot(rows, args.metric, args.out / "finetune_grid.png")
    print(text)


if __name__ == "__main__":
    main()
