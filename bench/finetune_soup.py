"""A fine-tuning grid made into one model: the greedy and uniform model soups of its runs
(zoo.train.soup; Wortsman et al., 2022), chosen on the dev split, then scored once on test.

    python -m bench.finetune_soup runs/sst2-grid/b* --task bert_finetune --data_dir ../shared/data \
        --soups runs/sst2-soup --out bench/results/DIR

Ingredients are the runs' `best.pt`, ranked by the dev score the run recorded for it
(bench.finetune_grid). The greedy soup keeps an ingredient when the soup's dev score does not
fall; the uniform soup averages them all. Only then are the two soups scored on the test split,
which chooses nothing. Writes SOUPS/checkpoints/{greedy,uniform}.pt (each loads with any verb:
`python -m zoo predict TASK SOUPS/checkpoints/greedy.pt`) and finetune_soup.{json,md} into --out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.finetune_grid import grid_row
from bench.output import add_out_option
from bench.tables import Column
from bench.tables import markdown as table
from zoo.cli import main_guard
from zoo.train.soup import greedy_soup, write_soup
from zoo.verbs import commands
from zoo.verbs.registry import get_spec

COLUMNS = (
    Column("ingredient, best dev first", "run"),
    Column("its dev", "dev", "{:.2f}"),
    Column("its test", "test", "{:.2f}"),
    Column("greedy soup's dev with it", "soup_score", "{:.2f}"),
    Column("joined", "joined"),
)


def evaluator(task: str, split: str, data_dir: str, threads: int):
    """A checkpoint file -> its score on `split`, through the evaluate verb."""
    spec = get_spec(task)

    def score(path: Path) -> float:
        argv = [str(path), "--split", split, "--data_dir", data_dir, "--threads", str(threads)]
        return commands.evaluate(spec, argv)["score"]

    return score


@main_guard
def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", type=Path, help="the grid's run directories")
    parser.add_argument("--task", required=True, help="the runs' task (python -m zoo's name)")
    parser.add_argument("--data_dir", required=True, help="the data directory the runs read")
    parser.add_argument("--soups", type=Path, required=True, help="the run directory the soups go to")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--metric", default="score", help="the dev metric runs recorded (best_metric)")
    add_out_option(parser)
    args = parser.parse_args()
    runs = sorted(run for run in args.runs if (run / "config.yaml").is_file())
    rows = sorted((grid_row(run, args.metric) for run in runs), key=lambda r: r["dev"], reverse=True)
    ranked = [Path(row["run"]) / "checkpoints" / "best.pt" for row in rows]
    folder = args.soups / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)

    dev = evaluator(args.task, "valid", args.data_dir, args.threads)
    kept, trials = greedy_soup(ranked, dev, folder / "greedy.pt")
    write_soup(ranked, folder / "uniform.pt")
    soups = {
        "greedy": {"ingredients": [str(p) for p in kept], "dev": max(t["soup_score"] for t in trials)},
        "uniform": {"ingredients": [str(p) for p in ranked], "dev": dev(folder / "uniform.pt")},
    }
    test = evaluator(args.task, "test", args.data_dir, args.threads)  # after every choice is made
    for name, soup in soups.items():
        soup["test"] = test(folder / f"{name}.pt")

    trial_rows = [{**row, **trial} for row, trial in zip(rows, trials)]
    for row in trial_rows:
        row["joined"] = "yes" if row["joined"] else ""
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"metric": args.metric, "trials": trial_rows, "soups": soups}
    (args.out / "finetune_soup.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = (
        table(trial_rows, COLUMNS)
        + [""]
        + [
            f"- {name} soup of {len(soup['ingredients'])}: dev {soup['dev']:.2f}, test {soup['test']:.2f}"
            for name, soup in soups.items()
        ]
    )
    text = "\n".join(lines) + "\n"
    (args.out / "finetune_soup.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
