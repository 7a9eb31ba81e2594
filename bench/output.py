"""Where a benchmark writes its JSON and tables: runs/bench/ unless told, so that trying a
benchmark never overwrites the committed records in bench/results/ (`--out bench/results`
records a new figure, to be committed with its command and hardware)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path("runs/bench")


def add_out_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"folder for the results (default {DEFAULT_OUT}; bench/results to record them)",
    )


def write_record(record: dict[str, Any], out: Path, name: str, text: str) -> None:
    """A benchmark's files in `out`: NAME.json (the record) and NAME.md (`text`)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / f"{name}.md").write_text(text)


def publish(record: dict[str, Any], out: Path, name: str, page: list[str]) -> None:
    """`write_record` with the page's lines, then the page on stdout."""
    text = "\n".join(page)
    write_record(record, out, name, text + "\n")
    print(text)


def write_study(record: dict[str, Any], out: Path, name: str, text: str, draw: Callable[[Path], Any]) -> None:
    """A study's files in `out`: NAME.json (the record), NAME.md (`text`) and NAME.png, which
    `draw(path)` draws (it returns False when there is nothing to draw yet)."""
    write_record(record, out, name, text)
    drawn = draw(out / f"{name}.png") is not False
    print(f"wrote {out / name}.json, .md{', .png' if drawn else ' (nothing measured yet: no figure)'}")
