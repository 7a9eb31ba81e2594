"""The semi-supervised parser's study as files: the record (JSON), its table with the commands
(Markdown), and a figure: test F1 against the number of silver trees, the teacher's F1 as a line,
and each student's dev F1 by step (PNG)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

from bench.output import write_study  # noqa: E402
from bench.studies.variations_report import described  # noqa: E402
from bench.tables import PCT, Column, markdown  # noqa: E402

COLUMNS = [
    Column("silver trees", "silver", "{:,}"),
    Column("steps", "steps", "{:,}"),
    Column("train minutes", "train_minutes", "{:.1f}"),
    Column("best dev F1 (greedy)", "dev_f1_best", PCT),
    Column("at step", "dev_best_step", "{:,}"),
    Column("test F1", "test_f1", PCT),
    Column("test P", "test_precision", PCT),
    Column("test R", "test_recall", PCT),
    Column("exact", "test_exact", PCT),
    Column("beam", "test_beam_size"),
    Column("sentences/s", "test_sentences_per_s", "{:.2f}"),
]
PAPER = "the paper (WSJ, 40K gold + 17M silver, 4 layers, d 1024): 92.7; WSJ only: 91.3"


def teacher_search(teacher: dict) -> str:
    """How the teacher decoded: a beam (a sequence-to-sequence teacher) or exact CKY (a chart one)."""
    beam = teacher.get("test_beam_size")
    return f"beam {beam}" if beam else "exact CKY search"


def markdown_report(record: dict[str, Any]) -> str:
    teacher = record["teacher"]
    lines = [
        "# The paper's parser, semi-supervised: F1 against the number of silver trees",
        "",
        f"`{record['command']}` at commit `{record['commit']}`; report written on "
        f"{described(record['hardware'])}.",
        "",
        "Students: `configs/parsing/ptb_sample_seq2seq_silver.yaml`, the paper's sequence-to-sequence "
        "parser (3+3 layers, d 256; no word pointer), trained on the PTB sample's 3,098 training "
        "trees (read 4 times an epoch) beside the first N silver trees, the same steps for every N. "
        "Dev F1 is the runner's greedy validation; test F1 the best-dev checkpoint's, with the "
        f"recipe's beam for the students and {teacher_search(teacher)} for the teacher, "
        f"scored by the zoo's EVALB (`tasks.parsing.evalb`) on the 396 test trees. Teacher "
        f"(`{teacher['run']}`, wrote the silver trees): test F1 {teacher['test_f1']:.2f}. "
        f"For scale: {PAPER}.",
        "",
        *markdown(record["students"], COLUMNS),
        "",
        "## Commands",
        "",
        "```bash",
        *([record["silver_command"]] if record["silver_command"] else []),
        *[line for s in record["students"] for line in (s["command"], s["evaluate"])],
        teacher["evaluate"],
        "```",
        "",
        "## Machines",
        "",
        *[
            f"- {s['silver']:,} silver trees: trained and tested on {s['hardware']}"
            for s in record["students"]
        ],
        "",
    ]
    return "\n".join(lines)


def figure(record: dict[str, Any], path: Path) -> None:
    """Test F1 by silver trees (left, the teacher as a line); dev F1 by step per student (right)."""
    students = record["students"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    sizes = [s["silver"] for s in students]
    left.plot(sizes, [s["test_f1"] for s in students], marker="o", label="student (seq2seq), test")
    left.axhline(
        record["teacher"]["test_f1"], color="gray", linestyle="--", label="teacher (chart + MiniLM), test"
    )
    left.set_xscale("symlog", linthresh=max(1000, min([n for n in sizes if n] or [1000])))
    left.set_xlabel("silver trees beside the 3,098 gold")
    left.set_ylabel("labeled F1")
    left.legend(loc="center left")  # below the teacher line, above the students
    for s in students:
        curve = s["dev_curve"]
        right.plot(
            [p["step"] for p in curve], [p["f1"] for p in curve], marker=".", label=f"{s['silver']:,} silver"
        )
    right.set_xlabel("step")
    right.set_ylabel("dev F1 (greedy)")
    right.legend(loc="upper left")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.suptitle("The paper's seq2seq parser with silver trees, PTB sample")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(record: dict[str, Any], out: Path, name: str) -> None:
    """NAME.json, NAME.md and NAME.png in `out` (bench.output.write_study)."""
    write_study(record, out, name, markdown_report(record), partial(figure, record))
