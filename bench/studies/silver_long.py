"""One silver student trained long: its greedy dev F1 and learning rate by step, one line per
training record (runs that share their first steps and part where one was resumed differently),
and the beam-21 test F1 of the checkpoints scored on their way (averaged or not), as a PNG.

    python -m bench.studies.silver_long bench/results/studies_silver_long \
        --runs student40k_metrics.jsonl student40k_40000_metrics.jsonl --out FILE.png

Reads the runs' metrics.jsonl copies and the folder's `PREFIX*_test*.json` records of
`python -m tasks.parsing.evaluate --json` (each names its checkpoint and step); a record whose
name says `cooldown` is drawn as a star (weights from the end of a cooldown, zoo.train.schedules).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

from zoo.train.metrics_log import read_metrics  # noqa: E402


def scored_points(folder: Path, prefix: str) -> list[tuple[str, dict]]:
    """The folder's test-split evaluation records named PREFIX*, as (file name, record)."""
    found = [(p.name, json.loads(p.read_text())) for p in sorted(folder.glob(f"{prefix}*_test*.json"))]
    return [(name, r) for name, r in found if r.get("split") == "test"]


def figure(folder: Path, runs: list[str], prefix: str, out: Path) -> None:
    fig, (f1, lr) = plt.subplots(2, 1, figsize=(9, 6), dpi=100, sharex=True, height_ratios=[3, 1])
    for name in runs:
        if not (folder / name).is_file():  # read_metrics would read a missing file as no records
            raise FileNotFoundError(folder / name)
        log = read_metrics(folder / name)  # once, then split by split
        valid, train = ([r for r in log if r["split"] == split] for split in ("valid", "train"))
        f1.plot(
            [r["step"] for r in valid], [r["f1"] for r in valid], linewidth=1, label=f"dev, greedy ({name})"
        )
        lr.plot([r["step"] for r in train], [r["lr"] for r in train], label=name)
    for name, point in scored_points(folder, prefix):
        marker = "*" if "cooldown" in name else "o"
        f1.scatter(point["step"], point["f1"], color="black", marker=marker, s=60, zorder=3)
        f1.annotate(
            f"{point['f1']:.2f}", (point["step"], point["f1"]), textcoords="offset points", xytext=(-12, 7)
        )
    f1.axhline(85, color="gray", linestyle="--", linewidth=1, label="target, test")
    f1.set_ylabel("labeled F1")
    f1.set_title(
        "The paper's parser, 40,000 silver trees: dev F1 (greedy) by step; test F1 (beam 21) as points"
    )
    f1.legend(loc="lower right")
    lr.set_ylabel("learning rate")
    lr.set_xlabel("step")
    for ax in (f1, lr):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path, help="the study's records: metrics copies and evaluation JSON")
    parser.add_argument(
        "--runs", nargs="+", required=True, help="metrics.jsonl copies in FOLDER, one line each"
    )
    parser.add_argument("--prefix", default="student40k_", help="the test records drawn: PREFIX*_test*.json")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    figure(args.folder, args.runs, args.prefix, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
