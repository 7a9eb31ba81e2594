"""Where a benchmark writes its JSON and tables: runs/bench/ unless told, so that trying a
benchmark never overwrites the committed records in bench/results/ (`--out bench/results`
records a new figure, to be committed with its command and hardware)."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_OUT = Path("runs/bench")
RECORDS = Path(__file__).parent / "results"


def add_out_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"folder for the results (default {DEFAULT_OUT}; bench/results to record them)",
    )
