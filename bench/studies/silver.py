"""The paper's parser, semi-supervised (section 6.3), in miniature: the plain sequence-to-sequence
parser trained on the PTB sample's training trees beside 0, 10,000, 40,000 ... silver trees, and
its test F1 against the number of silver trees.

    python -m bench.studies.silver [--data_dir DIR] [--sizes 0 10000 40000] [--threads 1]
        [--student_steps 0] [--precision fp32] [--teacher RUN] [--out_root runs/studies]
        [--out bench/results] [--dry_run]

Each step is a command of the zoo's own, printed as it runs; a finished step is not run again and
a stopped one resumes when the study is run again:

1. the teacher, the zoo's best chart parser: `configs/parsing/ptb_sample_chart_minilm.yaml`
   (89.4 test F1; it reads the MiniLM in runs/minilm, installed as that recipe's header says),
   trained into OUT_ROOT/silver/teacher, unless --teacher names a trained parser run;
2. the silver trees: `tasks.parsing.silver` parses the first max(--sizes) sentences of 5 to 40
   words of the English Wikipedia extract, in file order, into OUT_ROOT/silver/silver-N.mrg; a
   smaller size is the first N of those trees, so each size's trees include the smaller sizes';
3. the students: `configs/parsing/ptb_sample_seq2seq_silver.yaml` with each size's silver file
   (size 0: none), the same steps for every size (--student_steps, or the recipe's), in
   OUT_ROOT/silver/student-N;
4. the test F1 of the teacher and of each student's best checkpoint (by dev F1, greedy, as the
   runner validates), from `tasks.parsing.evaluate --split test` with the recipes' beams,
   cached in the run's study.json.

Writes studies_silver.{json,md,png} into --out (runs/bench unless told; bench/results to record
them) from every student measured so far.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.output import add_out_option
from bench.studies.multi30k import OUT_ROOT, call, default_data_dir, finished, shown, training_seconds
from bench.studies.silver_report import write_report
from bench.studies.variations import commit, machine
from bench.studies.variations_report import described
from tasks.parsing.config import ParsingConfig
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.train.metrics_log import read_metrics

NAME = "studies_silver"
TEACHER_RECIPE = "configs/parsing/ptb_sample_chart_minilm.yaml"
STUDENT_RECIPE = "configs/parsing/ptb_sample_seq2seq_silver.yaml"
TRAIN, EVALUATE, SILVER = "tasks.parsing.train", "tasks.parsing.evaluate", "tasks.parsing.silver"
SIZES = (0, 10_000, 40_000)
TEXT = "enwiki-extract"
RESULTS_FILE = "study.json"


@dataclass(frozen=True)
class Plan:
    """The study's commands and where their outputs go.

    Args:
        folder: OUT_ROOT/silver: the teacher, the silver files and the students.
        data_dir: the folder holding ptb-sample/ and enwiki-extract/.
        sizes: silver trees per student, increasing (0 = the treebank alone).
        threads: CPU threads of every command.
        student_steps: each student's optimizer steps (0 = the recipe's).
        teacher: a trained parser run to parse the silver with ('' = train the study's own).
        precision: fp32 | bf16, of the teacher's and students' training and of the parsing
            (bf16: autocast, whose products run about twice as fast where the CPU has AVX512-BF16).
    """

    folder: Path
    data_dir: str
    sizes: tuple[int, ...] = SIZES
    threads: int = 1
    student_steps: int = 0
    teacher: str = ""
    precision: str = "fp32"

    @property
    def teacher_dir(self) -> Path:
        return Path(self.teacher) if self.teacher else self.folder / "teacher"

    def teacher_args(self) -> list[str]:
        return [
            "--config", TEACHER_RECIPE, f"--data.data_dir={self.data_dir}",
            f"--train.out_dir={self.teacher_dir}", f"--train.threads={self.threads}",
            "--train.progress=false", *self.precision_args("--train.precision"),
        ]  # fmt: skip

    def precision_args(self, key: str) -> list[str]:
        """`key=precision`, left out at fp32 (every command's default) so the commands stay short."""
        return [] if self.precision == "fp32" else [f"{key}={self.precision}"]

    def silver_file(self, size: int) -> Path:
        return self.folder / f"silver-{size}.mrg"

    def silver_args(self) -> list[str]:
        """Parse the largest size's sentences; the smaller sizes are cut from its file."""
        largest = max(self.sizes)
        return [
            str(self.teacher_dir), f"--input={Path(self.data_dir) / TEXT}",
            f"--output={self.silver_file(largest)}", f"--limit={largest}", f"--threads={self.threads}",
            f"--data_dir={self.data_dir}", *self.precision_args("--precision"),
        ]  # fmt: skip

    def student_dir(self, size: int) -> Path:
        return self.folder / f"student-{size}"

    def student_args(self, size: int) -> list[str]:
        extra = f"[{self.silver_file(size)}]" if size else "[]"
        steps = [f"--train.max_steps={self.student_steps}"] if self.student_steps else []
        return [
            "--config", STUDENT_RECIPE, f"--data.data_dir={self.data_dir}", f"--data.extra_train={extra}",
            f"--train.out_dir={self.student_dir(size)}", f"--train.threads={self.threads}",
            "--train.progress=false", *steps, *self.precision_args("--train.precision"),
        ]  # fmt: skip

    def evaluate_args(self, run_dir: Path) -> list[str]:
        return [
            str(run_dir), "--split=test", f"--threads={self.threads}", f"--data_dir={self.data_dir}",
            "--json",
        ]  # fmt: skip

    def commands(self) -> list[str]:
        """Every command of the study in order (what --dry_run prints)."""
        lines = [] if self.teacher else [shown(TRAIN, self.teacher_args())]
        if max(self.sizes):
            lines.append(shown(SILVER, self.silver_args()))
        for size in self.sizes:
            lines += [
                shown(TRAIN, self.student_args(size)),
                shown(EVALUATE, self.evaluate_args(self.student_dir(size))),
            ]
        return lines


def config(args: list[str]) -> ParsingConfig:
    """A training command's config as it parses it: a bad key or value stops the study first."""
    return parse_cli(ParsingConfig, args, default_config=None, description="")


def first_trees(source: Path, size: int, target: Path) -> None:
    """Write the first `size` trees (lines) of `source` to `target`."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    if len(lines) < size:
        raise UserError(f"{source}: {len(lines):,} silver trees, fewer than the {size:,} asked for")
    target.write_text("".join(lines[:size]), encoding="utf-8")


def silver(plan: Plan) -> None:
    """The silver file of every size, parsing only when the largest is missing."""
    largest = max(plan.sizes)
    if not largest:
        return
    if not plan.silver_file(largest).is_file():
        call(SILVER, plan.silver_args())
    for size in plan.sizes:
        if 0 < size < largest and not plan.silver_file(size).is_file():
            first_trees(plan.silver_file(largest), size, plan.silver_file(size))


def trained(args: list[str], run_dir: Path) -> dict[str, Any]:
    """Train unless finished; then what the runner logged: steps, minutes in training steps, the
    best dev F1 (greedy) and its step."""
    steps = config(args).train.max_steps
    if not finished(run_dir, steps):
        call(TRAIN, args)
    valid = read_metrics(run_dir, "valid")
    if not valid:
        raise UserError(f"{run_dir}: no validation in metrics.jsonl")
    best = max(valid, key=lambda r: r["f1"])
    return {
        "command": shown(TRAIN, args),
        "steps": steps,
        "train_minutes": training_seconds(read_metrics(run_dir), unit="words") / 60,
        "dev_f1_best": best["f1"],
        "dev_best_step": best["step"],
        "dev_curve": [{"step": r["step"], "f1": r["f1"]} for r in valid],
    }


def tested(plan: Plan, run_dir: Path) -> dict[str, Any]:
    """The evaluate command's --json record on the test split (the last line it prints)."""
    args = plan.evaluate_args(run_dir)
    record = json.loads(call(EVALUATE, args, capture=True).strip().splitlines()[-1])
    keep = ("f1", "precision", "recall", "exact", "beam_size", "sentences_per_s")
    return {"evaluate": shown(EVALUATE, args), **{f"test_{k}": record[k] for k in keep if k in record}}


def measured(plan: Plan, args: list[str], run_dir: Path, extra: dict[str, Any]) -> dict[str, Any]:
    """A run trained and tested once: its study.json, made when missing."""
    cache = run_dir / RESULTS_FILE
    if cache.is_file():
        return json.loads(cache.read_text())
    results = {**extra, **trained(args, run_dir), **tested(plan, run_dir), "hardware": described(machine())}
    cache.write_text(json.dumps(results, indent=2) + "\n")
    return results


def silver_count(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data_dir", default=default_data_dir(), help="folder holding ptb-sample/ and enwiki-extract/"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="silver trees per student")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of every command")
    parser.add_argument(
        "--student_steps", type=int, default=0, help="each student's steps (0 = the recipe's)"
    )
    parser.add_argument(
        "--precision", choices=("fp32", "bf16"), default="fp32", help="training and parsing precision"
    )
    parser.add_argument("--teacher", default="", help="a trained parser run to parse the silver trees with")
    parser.add_argument("--out_root", type=Path, default=OUT_ROOT, help="where the studies' runs live")
    parser.add_argument("--dry_run", action="store_true", help="print the commands; run nothing")
    add_out_option(parser)
    args = parser.parse_args(argv)
    if (
        min(args.sizes) < 0
        or args.sizes != sorted(set(args.sizes))
        or args.threads < 1
        or args.student_steps < 0
    ):
        raise UserError("--sizes must be distinct, increasing and at least 0; --threads at least 1; "
                        "--student_steps at least 0")  # fmt: skip
    return args


@main_guard
def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = arguments(argv)
    plan = Plan(args.out_root / "silver", args.data_dir, tuple(args.sizes), args.threads, args.student_steps,
                args.teacher, args.precision)  # fmt: skip
    for size in plan.sizes:
        config(plan.student_args(size))
    if not plan.teacher:
        config(plan.teacher_args())
    if args.dry_run:
        print("\n".join(plan.commands()))
        return None
    plan.folder.mkdir(parents=True, exist_ok=True)
    if not plan.teacher and not finished(plan.teacher_dir, config(plan.teacher_args()).train.max_steps):
        print(f"== teacher: {shown(TRAIN, plan.teacher_args())}", flush=True)
        call(TRAIN, plan.teacher_args())
    silver(plan)
    students = {}
    for size in plan.sizes:
        print(f"== student, {size:,} silver trees: {shown(TRAIN, plan.student_args(size))}", flush=True)
        extra = {"silver": silver_count(plan.silver_file(size)) if size else 0}
        students[size] = measured(plan, plan.student_args(size), plan.student_dir(size), extra)
    teacher_cache = plan.folder / "teacher.json"
    if not teacher_cache.is_file():
        teacher_cache.write_text(json.dumps(tested(plan, plan.teacher_dir), indent=2) + "\n")
    record = {
        "study": "the parser, semi-supervised (bench.studies.silver)",
        "command": shlex.join(["python", "-m", "bench.studies.silver", *argv]),
        "silver_command": shown(SILVER, plan.silver_args()) if max(plan.sizes) else None,
        "teacher": {"run": str(plan.teacher_dir), **json.loads(teacher_cache.read_text())},
        "hardware": machine(),
        "commit": commit(),
        "students": [students[size] for size in plan.sizes],
    }
    write_report(record, args.out, NAME)
    return record


if __name__ == "__main__":
    main()
