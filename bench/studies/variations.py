"""The paper's Table 3 in miniature: variations on the Transformer, trained on Multi30k En->De.

    python -m bench.studies.variations [--rows base,A,B,C,D,E,scores] [--data_dir DIR] [--threads N]
        [--max_steps 800] [--seed 0] [--out_root runs/studies/variations] [--out bench/results] [--dry_run]

The base is the `multi30k` recipe's model, not the paper's: 3+3 layers, d_model 256, d_ff 1024,
4 heads (d_k = d_v = 64), dropout 0.3 (the paper's base: 0.1), label smoothing 0.1, sinusoidal
positions, scaled dot-product scores; every row trains at the study budget (bench.studies.
multi30k: 800 steps, warm-up 200, cosine to zero, validations at 400 and 800, 2 threads). The
recipe's full run reached step 800 in 22 minutes on 2 CPU cores (docs/translation.md), so a base
row with its beam-4 evaluations takes about half an hour there, and the 19 runs of the 24 rows
(larger rows cost more) most of a night. The rows follow the paper's groups: (A) heads at equal
compute, (B) smaller d_k, (C) depth and width, (D) dropout and label smoothing, (E) learned
positions, and the score functions of section 3.2.1. Rows equal to the base (heads 4, dropout
0.3, ...) are the base's run. Each row's run is cached in OUT_ROOT/<row>: a stopped study
resumes where it stopped, and a finished row is neither trained nor measured again.

Writes studies_variations.{json,md,png} into --out (runs/bench unless told; bench/results to
record them) from every row measured so far, whichever rows this command ran: a row whose run is
not in the cache (a fresh checkout) keeps its figures from the report being replaced, when that
report was written at the same budget. `--seed N` retrains
the chosen rows from another seed, in runs/studies/variations-seedN, reported as
studies_variations_seedN: the spread between seeds is what a difference between rows must exceed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from bench.output import add_out_option
from bench.studies.multi30k import (
    EVALUATE,
    OUT_ROOT,
    STUDY_STEPS,
    TRAIN,
    Budget,
    Row,
    cached_results,
    default_data_dir,
    measure,
    shared_runs,
    shown,
)
from bench.studies.variations_report import described, write_report
from bench.timing import cpu_model
from zoo.cli import main_guard
from zoo.config import UserError

NAME = "studies_variations"
BASE = Row(
    "base",
    "base",
    {},
    "the multi30k recipe: 3+3 layers, d_model 256, d_ff 1024, 4 heads (d_k = d_v = 64), dropout 0.3, "
    "label smoothing 0.1, sinusoidal positions, scaled dot-product",
)
ROWS = [
    BASE,
    *[
        Row(f"A-heads{h}", "A", {"model.num_heads": h}, f"d_k = d_v = 256/{h} = {256 // h}: equal compute")
        for h in (1, 2, 4, 8)
    ],
    *[Row(f"B-dk{k}", "B", {"model.key_dim": k}, f"d_k {k} with 4 heads; d_v stays 64") for k in (16, 32)],
    *[
        Row(f"C-layers{n}", "C", {"model.encoder_layers": n, "model.decoder_layers": n}, f"{n}+{n} layers")
        for n in (2, 4)
    ],
    *[
        Row(
            f"C-dim{d}",
            "C",
            {"model.dim": d, "model.ffn_dim": 4 * d},
            f"d_k = d_v = {d // 4}; the learning rate stays the recipe's",
        )
        for d in (128, 512)
    ],
    *[Row(f"C-ffn{f}", "C", {"model.ffn_dim": f}) for f in (512, 2048)],
    *[Row(f"D-dropout{p}", "D", {"model.dropout": p}) for p in (0.0, 0.1, 0.3)],
    *[Row(f"D-ls{e}", "D", {"label_smoothing": e}) for e in (0.0, 0.1, 0.2)],
    Row("E-learned", "E", {"model.positions": "learned"}, "a learned table of model.max_len 256 positions"),
    Row("E-sinusoidal", "E", {"model.positions": "sinusoidal"}),
    Row(
        "E-sinusoidal0.1",
        "E",
        {"model.position_scale": 0.1},
        "the sinusoids times 0.1 (root mean square 0.071): the learned table's size after 800 steps",
    ),
    *[
        Row(f"scores-{s}", "scores", {"model.attention_score": s}, note)
        for s, note in (
            ("scaled_dot", "q.k / sqrt(d_k)"),
            ("dot", "q.k, unscaled"),
            ("additive", "w . tanh(q + k) (Bahdanau et al.)"),
        )
    ],
]
GROUPS = tuple(dict.fromkeys(row.group for row in ROWS))


def select(rows: list[Row], wanted: str) -> list[Row]:
    """The rows named in `wanted` (comma-separated groups or row names), in table order."""
    names = [w.strip() for w in wanted.split(",") if w.strip()]
    groups = list(dict.fromkeys(row.group for row in rows))
    unknown = [name for name in names if name not in {*groups, *(row.name for row in rows)}]
    if unknown:
        raise UserError(f"--rows: unknown {', '.join(unknown)}; groups: {', '.join(groups)}, or a row name")
    return [row for row in rows if row.group in names or row.name in names]


def machine() -> dict[str, Any]:
    """Where the study ran: the CPU (lscpu's model name) and cores, the GPU if any, torch."""
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "gpu": gpu, "torch": torch.__version__}


def commit() -> str:
    """The checkout's commit, `-dirty` when the working tree differs from it."""
    done = subprocess.run(
        ["git", "describe", "--always", "--dirty", "--abbrev=12"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown (not a git checkout)"


def dry_run(rows: list[Row], runs: dict[str, str], budget: Budget) -> str:
    """Every chosen row's commands, as the study would run them."""
    lines = []
    for row in rows:
        if runs[row.name] != row.name:
            lines.append(f"# {row.name}: the run of {runs[row.name]} (the same config)")
            continue
        lines += [
            f"# {row.name}",
            shown(TRAIN, budget.train_args(row)),
            shown(EVALUATE, budget.evaluate_args(row)),
        ]
    return "\n".join(lines)


def earlier_results(report: Path, budget: Budget) -> dict[str, dict[str, Any]]:
    """Row name -> results in the report at `report`, if it was written at this budget."""
    if not report.is_file():
        return {}
    record = json.loads(report.read_text())
    if record["budget"]["max_steps"] != budget.max_steps:
        return {}
    return {row["name"]: row["results"] for row in record["rows"] if row["results"]}


def assemble(
    budget: Budget, runs: dict[str, str], command: str, earlier: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The study's record, every row read from its run's study.json, else from `earlier` (the
    report being replaced), else None (not measured)."""
    by_name = {row.name: row for row in ROWS}
    rows = []
    for row in ROWS:
        source = by_name[runs[row.name]]
        rows.append(
            {
                "name": row.name,
                "group": row.group,
                "changes": row.changes(),
                "note": row.note,
                "runs_as": source.name,
                "command": shown(TRAIN, budget.train_args(source)),
                "evaluate": shown(EVALUATE, budget.evaluate_args(source)),
                "results": cached_results(source, budget) or earlier.get(source.name),
            }
        )
    return {
        "study": "Table 3 in miniature (bench.studies.variations)",
        "command": command,
        "budget": {"max_steps": budget.max_steps, "threads": budget.threads, "flags": budget.flags()},
        "base": BASE.note,
        "hardware": machine(),
        "commit": commit(),
        "rows": rows,
    }


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", default=",".join(GROUPS), help="groups or row names, comma-separated")
    parser.add_argument("--data_dir", default=default_data_dir(), help="folder holding multi30k/")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads per run")
    parser.add_argument(
        "--max_steps", type=int, default=STUDY_STEPS, help="steps per row (smoke tests: fewer)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="train.seed of every run (0: the recipe's, the main table)"
    )
    parser.add_argument(
        "--out_root",
        type=Path,
        default=None,
        help="the rows' run directories (default runs/studies/variations, -seedN with --seed N)",
    )
    parser.add_argument(
        "--dry_run", action="store_true", help="print every chosen row's commands; run nothing"
    )
    add_out_option(parser)
    args = parser.parse_args(argv)
    if args.out_root is None:
        args.out_root = OUT_ROOT / ("variations" + (f"-seed{args.seed}" if args.seed else ""))
    if args.max_steps < 2 or args.threads < 1:
        raise UserError(
            f"--max_steps must be at least 2 and --threads at least 1, not {args.max_steps}, {args.threads}"
        )
    return args


@main_guard
def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = arguments(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    budget = Budget(args.out_root, args.data_dir, args.max_steps, args.threads, device, args.seed)
    runs = shared_runs(ROWS, budget)  # parses every row's config: a bad key stops the study here
    chosen = select(ROWS, args.rows)
    if args.dry_run:
        print(dry_run(chosen, runs, budget))
        return None
    by_name = {row.name: row for row in ROWS}
    todo = [by_name[name] for name in dict.fromkeys(runs[row.name] for row in chosen)]
    hardware = described(machine())
    for i, row in enumerate(todo, 1):
        print(f"== {row.name} ({i}/{len(todo)}): {row.changes() or 'the base'}", flush=True)
        results = measure(row, budget, hardware)
        print(
            f"== {row.name}: ppl {results['ppl']:.2f}, BLEU greedy {results['bleu_greedy']:.2f}, "
            f"beam 4 {results['bleu_beam4']:.2f}",
            flush=True,
        )
    stem = NAME + (f"_seed{args.seed}" if args.seed else "")
    command = shlex.join(["python", "-m", "bench.studies.variations", *argv])
    record = assemble(budget, runs, command, earlier_results(args.out / f"{stem}.json", budget))
    write_report(record, args.out, stem)
    return record


if __name__ == "__main__":
    main()
