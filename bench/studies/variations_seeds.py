"""Table 3 in miniature across seeds: each row's figures from every seed measured, their mean and range.

    python -m bench.studies.variations_seeds [--results bench/results] [--out bench/results]

Reads the study's reports, studies_variations.json (seed 0) and studies_variations_seedN.json,
and for every row measured under at least two seeds writes studies_variations_seeds.{md,json}:
per seed the validation perplexity and beam-4 BLEU, then the mean and the range (largest minus
smallest) of beam-4 BLEU, and the row's mean gap to the base's mean. A gap smaller than the two
rows' ranges is not read as a finding.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from typing import Any

from bench.output import add_out_option
from bench.studies.variations_report import described
from zoo.cli import main_guard
from zoo.config import UserError

STEM = "studies_variations"
SEED_FILE = re.compile(rf"{STEM}(?:_seed(\d+))?\.json$")


def seed_reports(results: Path) -> dict[int, dict[str, Any]]:
    """seed -> that seed's study report, every one found in `results`."""
    reports = {}
    for path in sorted(results.glob(f"{STEM}*.json")):
        match = SEED_FILE.fullmatch(path.name)
        if match:
            reports[int(match.group(1) or 0)] = json.loads(path.read_text())
    return reports


def across_seeds(reports: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows measured under two seeds or more, in table order: name, changes, and per seed
    (ppl, beam-4 BLEU, hardware), with the BLEU's mean and range."""
    order: dict[str, str] = {}
    measured: dict[str, dict[int, dict[str, Any]]] = {}
    for seed, report in sorted(reports.items()):
        for row in report["rows"]:
            if row["runs_as"] != row["name"]:  # a row equal to another (heads 4 = the base)
                continue
            order.setdefault(row["name"], row["changes"])
            results = row["results"]
            if results and "bleu_beam4" in results:
                measured.setdefault(row["name"], {})[seed] = {
                    "ppl": results["ppl"],
                    "bleu_beam4": results["bleu_beam4"],
                    "hardware": results["hardware"],
                }
    rows = []
    for name, changes in order.items():
        seeds = measured.get(name, {})
        if len(seeds) < 2:
            continue
        bleu = [s["bleu_beam4"] for s in seeds.values()]
        rows.append(
            {
                "name": name,
                "changes": changes,
                "seeds": seeds,
                "mean": statistics.fmean(bleu),
                "range": max(bleu) - min(bleu),
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]], seeds: list[int]) -> str:
    base = next((r for r in rows if r["name"] == "base"), None)
    head = " | ".join(f"seed {s}: ppl / BLEU" for s in seeds)
    lines = [
        f"| row | changes | {head} | BLEU mean | range | mean - base mean |",
        "|---|---|" + "---|" * len(seeds) + "---|---|---|",
    ]
    for r in rows:
        cells = [
            f"{r['seeds'][s]['ppl']:.2f} / {r['seeds'][s]['bleu_beam4']:.2f}" if s in r["seeds"] else "-"
            for s in seeds
        ]
        gap = f"{r['mean'] - base['mean']:+.2f}" if base and r is not base else "-"
        lines.append(
            f"| {r['name']} | {r['changes'] or 'the base'} | {' | '.join(cells)} | {r['mean']:.2f} | "
            f"{r['range']:.2f} | {gap} |"
        )
    return "\n".join(lines)


def hardware_note(reports: dict[int, dict[str, Any]]) -> str:
    return "; ".join(
        f"seed {seed}: {described(report['hardware'])}" for seed, report in sorted(reports.items())
    )


@main_guard
def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--results", type=Path, default=Path("bench/results"), help="where the reports are")
    add_out_option(parser)
    args = parser.parse_args()
    reports = seed_reports(args.results)
    if len(reports) < 2:
        raise UserError(f"{args.results}: fewer than two seeds' {STEM}*.json reports")
    rows = across_seeds(reports)
    seeds = sorted(reports)
    text = "\n".join(
        [
            "# Table 3 in miniature across seeds (validation, beam 4)",
            "",
            "`python -m bench.studies.variations_seeds` from "
            + ", ".join(f"`{STEM}{f'_seed{s}' if s else ''}.json`" for s in seeds)
            + f". Hardware per seed's report: {hardware_note(reports)}.",
            "",
            markdown(rows, seeds),
            "",
        ]
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{STEM}_seeds.md").write_text(text)
    (out / f"{STEM}_seeds.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
