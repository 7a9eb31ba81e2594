"""Which kernel inductor's GEMM autotuning chose for each product, read from a compile log.

    TORCHINDUCTOR_MAX_AUTOTUNE=1 python -m bench.gpu ... > LOG 2>&1
    python -m bench.autotune_choices LOG [LOG ...]

For every `AUTOTUNE` table in the log: the product's shape, the fastest choice and its time, and
torch's own kernel (`mm`, `addmm`, `bias_addmm`: cuBLAS) with its time when it is among the rows
printed. The question it answers: does autotuning replace cuBLAS for the products that hold a
step's time, or only for small ones?
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

CHOICE = re.compile(r"^\s+(\S+) ([\d.]+) ms ([\d.]+)%")
ATEN = {"mm", "addmm", "bias_addmm", "bmm", "baddbmm"}


def choices(log: str) -> list[dict]:
    """One record per AUTOTUNE table: shape, best (name, ms), aten (name, ms) or None."""
    lines = log.splitlines()
    records = []
    for i, line in enumerate(lines):
        if not line.startswith("AUTOTUNE "):
            continue
        rows = []
        for row in lines[i + 1 :]:
            if row.startswith(("strides:", "dtypes:")):
                continue
            match = CHOICE.match(row)
            if not match:
                break
            rows.append((match.group(1), float(match.group(2))))
        if rows:
            aten = next((r for r in rows if r[0] in ATEN), None)
            records.append({"shape": line[len("AUTOTUNE ") :], "best": rows[0], "aten": aten})
    return records


def markdown(records: list[dict]) -> str:
    lines = ["| product | fastest | ms | cuBLAS ms | cuBLAS / fastest |", "|---|---|---|---|---|"]
    for r in records:
        name, ms = r["best"]
        aten = f"{r['aten'][1]:.4f}" if r["aten"] else "not in the printed rows"
        ratio = f"{r['aten'][1] / ms:.2f}x" if r["aten"] else "-"
        lines.append(f"| `{r['shape']}` | {name} | {ms:.4f} | {aten} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("logs", nargs="+", type=Path)
    for path in parser.parse_args().logs:
        print(f"## {path}\n\n{markdown(choices(path.read_text()))}\n")


if __name__ == "__main__":
    main()
