"""A validation metric of a run against wall time, as a PNG for the README and bench/results.

    python -m bench.curve RUN --metric bleu [--start EPOCH_SECONDS] [--test-label TEXT] --out FILE.png

Reads RUN/metrics.jsonl (the runner's log: every record has its wall-clock `time`). The x axis
is minutes since `--start` (when the command was launched; default: the first logged record),
so the curve shows what a user waits for, set-up and evaluations included. `--test` adds the
final test figure as a marked point at the run's last record.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402


def read_records(run: Path) -> list[dict]:
    with open(run / "metrics.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--metric", default="bleu", help="a key of the validation records")
    parser.add_argument("--start", type=float, default=0.0, help="launch time, seconds since the epoch")
    parser.add_argument("--test", type=float, default=None, help="the final test figure, marked at the end")
    parser.add_argument("--test-label", default="test", help="legend of the --test point")
    parser.add_argument("--title", default="")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    records = read_records(args.run)
    start = args.start or records[0]["time"]
    valid = [r for r in records if r.get("split") == "valid" and args.metric in r]
    if not valid:
        raise SystemExit(f"{args.run / 'metrics.jsonl'}: no validation records with {args.metric!r}")
    minutes = [(r["time"] - start) / 60 for r in valid]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    ax.plot(minutes, [r[args.metric] for r in valid], marker="o", label=f"validation {args.metric}")
    for m, r in zip(minutes, valid):
        ax.annotate(f"{r['step']}", (m, r[args.metric]), textcoords="offset points", xytext=(0, -12),
                    fontsize=7, ha="center", color="gray")
    if args.test is not None:
        end = (records[-1]["time"] - start) / 60
        ax.plot([end], [args.test], marker="*", markersize=12, linestyle="none", label=args.test_label)
    ax.set_xlabel("wall time since launch (minutes; gray: step)")
    ax.set_ylabel(args.metric)
    ax.set_title(args.title or str(args.run))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
