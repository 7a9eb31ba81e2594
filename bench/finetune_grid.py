"""A fine-tuning grid read back and its run chosen on the dev split, as Turc et al. chose the small
BERTs' GLUE runs: each run's best dev score (the checkpoint `best.pt` holds), the run with the
highest, and beside each the test score its `best.pt` reached (`zoo evaluate ... --split test
--json` wrote RUN/eval_test.json; the test split chooses nothing).

    python -m bench.finetune_grid runs/sst2-grid/* [--metric score] [--out bench/results/DIR]

Writes finetune_grid.{json,md} into --out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

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
    print(text)


if __name__ == "__main__":
    main()
