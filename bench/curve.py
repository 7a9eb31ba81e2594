"""A validation metric of a run against wall time, as a PNG for the README and bench/results.

    python -m bench.curve RUN [RUN2 ...] --metric bleu [--start EPOCH_SECONDS] [--test-label TEXT] \
        --out FILE.png

Reads RUN/metrics.jsonl (the runner's log: every record has its wall-clock `time`). The x axis
is minutes since `--start` (when the command was launched; default: the first logged record),
so the curve shows what a user waits for, set-up and evaluations included. `--test` adds the
final test figure as a marked point at the run's last record. Several runs are stages trained
one after another (the later ones started with `train.init_from`): drawn end to end, each
later stage's minutes counted from its first record and its steps after the previous stage's.
Time a run spent stopped (stopped by SIGTERM, resumed later) is left out: a pause between two
records longer than ten times the median interval counts as one median interval.
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


def running_minutes(records: list[dict], start: float) -> list[float]:
    """Minutes since `start` at each record, without the time the run was stopped."""
    times = [start] + [r["time"] for r in records]
    gaps = [b - a for a, b in zip(times, times[1:])]
    between = sorted(gaps[1:] or gaps)  # the first gap is set-up, not a logging interval
    typical = between[len(between) // 2]
    out, total = [], 0.0
    for gap in gaps:
        total += typical if gap > 10 * typical else gap
        out.append(total / 60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", type=Path, nargs="+", help="run directories, in training order")
    parser.add_argument("--metric", default="bleu", help="a key of the validation records")
    parser.add_argument("--start", type=float, default=0.0, help="launch time, seconds since the epoch")
    parser.add_argument("--test", type=float, default=None, help="the final test figure, marked at the end")
    parser.add_argument("--test-label", default="test", help="legend of the --test point")
    parser.add_argument("--title", default="")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    minutes, values, steps, boundaries = [], [], [], []
    elapsed, done = 0.0, 0
    for stage, run in enumerate(args.runs):
        records = read_records(run)
        start = args.start if stage == 0 and args.start else records[0]["time"]
        clock = running_minutes(records, start)
        valid = [(m, r) for m, r in zip(clock, records) if r.get("split") == "valid" and args.metric in r]
        if not valid:
            raise SystemExit(f"{run / 'metrics.jsonl'}: no validation records with {args.metric!r}")
        minutes += [elapsed + m for m, _ in valid]
        values += [r[args.metric] for _, r in valid]
        steps += [done + r["step"] for _, r in valid]
        elapsed, done = elapsed + clock[-1], done + records[-1]["step"]
        boundaries.append(elapsed)
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    ax.plot(minutes, values, marker="o", label=f"validation {args.metric}")
    for m, value, step in zip(minutes, values, steps):
        ax.annotate(
            f"{step}",
            (m, value),
            textcoords="offset points",
            xytext=(0, -12),
            fontsize=7,
            ha="center",
            color="gray",
        )
    for boundary in boundaries[:-1]:
        ax.axvline(boundary, color="gray", linestyle="--", linewidth=0.8)
    if args.test is not None:
        ax.plot([elapsed], [args.test], marker="*", markersize=12, linestyle="none", label=args.test_label)
    ax.set_xlabel("wall time since launch (minutes; gray: step)")
    ax.set_ylabel(args.metric)
    ax.set_title(args.title or " + ".join(str(run) for run in args.runs))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
