"""How closely two runs of `zoo evaluate ... --output FILE` agree, item by item: a quantized
model's predictions against its float model's, say, where an accuracy change of a few items says
little (SST-2's dev set: one sentence is 0.115 points).

    python -m bench.agreement REFERENCE.txt OTHER.txt [--json]

Each line is a prediction as the classify head writes it, `LABEL<TAB>PROBABILITY`. Reports the
share of items with the same label and the mean absolute difference of the probability each
model gives the reference's label.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from zoo.cli import main_guard
from zoo.config import UserError


def read_predictions(path: Path) -> list[tuple[str, float]]:
    """(label, probability) per line; a malformed line is refused naming the file and line."""
    predictions = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        label, _, probability = line.partition("\t")
        try:
            predictions.append((label, float(probability)))
        except ValueError:
            raise UserError(f"{path}:{number}: expected LABEL<TAB>PROBABILITY, got {line!r}") from None
    return predictions


def agreement(reference: list[tuple[str, float]], other: list[tuple[str, float]]) -> dict[str, float]:
    """Same-label share and mean |difference| of the probability of the reference's label (for
    the other model: its own probability if it chose that label, else 1 minus it, exact for two
    labels)."""
    if len(reference) != len(other):
        raise UserError(f"the files hold {len(reference)} and {len(other)} predictions")
    same = [a == b for (a, _), (b, _) in zip(reference, other)]
    gaps = [abs(p - (q if s else 1.0 - q)) for (_, p), (_, q), s in zip(reference, other, same)]
    return {
        "items": len(same),
        "same_label": sum(same) / len(same),
        "mean_abs_probability_gap": sum(gaps) / len(gaps),
    }


@main_guard
def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("reference", type=Path)
    parser.add_argument("other", type=Path)
    parser.add_argument("--json", action="store_true", help="print the record as JSON")
    args = parser.parse_args(argv)
    result = agreement(read_predictions(args.reference), read_predictions(args.other))
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['items']} items: same label {100 * result['same_label']:.2f}%, "
              f"mean |probability gap| {result['mean_abs_probability_gap']:.4f}")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
