"""Multi30k runs at the study budget: a row is the `multi30k` recipe with a few keys changed,
trained by the task's own command, measured on the validation split and cached beside its run.

The studies compare rows that share everything but their changes: the recipe, the budget (a
fixed number of steps, warm-up a quarter of them, cosine to zero, a validation at the half and
at the end) and the threads. Each row is one command a reader can run alone; its run directory
is `OUT_ROOT/<study>/<row>`. A row whose resolved config equals an earlier row's is that row's
run (heads 4 is the base): it is neither trained nor measured twice.

Per row, in `<run>/study.json` (re-running a study measures only what it lacks there):
parameters; teacher-forced perplexity per target token and greedy sacreBLEU from the runner's
final validation (decode.eval_beam_size 1); sacreBLEU with beam 4 from the evaluate command
(`--checkpoint last`); and the minutes spent in training steps, summed from the runner's log
windows (set-up, checkpoint writes and validations at a logged step left out), so a run resumed
after a stop adds up as one, less the steps it made between its last log line and the stop (at
most train.log_every, 25 of the 800).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.translation.config import TranslationConfig
from zoo.config import UserError, parse_cli, to_dict
from zoo.train import Interrupted
from zoo.train.metrics_log import read_metrics

RECIPE = "configs/translation/multi30k.yaml"
OUT_ROOT = Path("runs/studies")
STUDY_STEPS = 800
LOG_EVERY = 25  # train.log_every of configs/translation/multi30k.yaml and multi30k_rnn.yaml
RESULTS_FILE = "study.json"
TRAIN, EVALUATE = "tasks.translation.train", "tasks.translation.evaluate"
BEAM = 4


@dataclass(frozen=True)
class Row:
    """One line of a study: `overrides` (dotted recipe keys -> values) relative to the base."""

    name: str
    group: str
    overrides: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def flags(self) -> list[str]:
        return [f"--{key}={value}" for key, value in self.overrides.items()]

    def changes(self) -> str:
        """`num_heads=1 key_dim=16`: the overrides as the table shows them."""
        return " ".join(f"{key.removeprefix('model.')}={value}" for key, value in self.overrides.items())


def eval_every(steps: int, evals: int) -> int:
    """Steps between `evals` validations of a `steps`-step run: a multiple of the recipes'
    train.log_every (LOG_EVERY) where the run is long enough, since a run's curve keeps only the
    validations at a logged step (bench.studies.recurrent.curve)."""
    every = max(1, steps // evals)
    return every - every % LOG_EVERY if every >= LOG_EVERY else every


@dataclass(frozen=True)
class Budget:
    """What every row of a study shares.

    Args:
        out_root: the study's folder; each row runs in out_root/<row name>.
        data_dir: the folder holding multi30k/.
        max_steps: optimizer steps per row (warm-up a quarter, `evals` validations).
        threads: CPU threads for training and evaluation.
        device: where the evaluate command runs (training takes the runner's train.device=auto).
        seed: the runs' train.seed (0, the recipe's, is left out of the commands): another seed
            retrains the rows to show how much of a difference between them is chance.
        evals: validations per run, evenly spaced, the last at the end (`eval_every`).
    """

    out_root: Path
    data_dir: str
    max_steps: int = STUDY_STEPS
    threads: int = 2
    device: str = "cpu"
    seed: int = 0
    evals: int = 2

    def run_dir(self, row: Row) -> Path:
        return self.out_root / row.name

    def flags(self) -> list[str]:
        return [
            f"--data.data_dir={self.data_dir}",
            f"--train.max_steps={self.max_steps}",
            "--schedule.name=cosine",
            f"--schedule.warmup_steps={max(1, self.max_steps // 4)}",
            f"--train.eval_every={eval_every(self.max_steps, self.evals)}",
            "--decode.eval_beam_size=1",
            f"--train.threads={self.threads}",
            *([f"--train.seed={self.seed}"] if self.seed else []),
        ]

    def train_args(self, row: Row) -> list[str]:
        """The training command's arguments after `python -m TRAIN`."""
        return ["--config", RECIPE, *self.flags(), f"--train.out_dir={self.run_dir(row)}", *row.flags()]

    def evaluate_args(self, row: Row) -> list[str]:
        """The evaluate command's arguments: beam 4 on the validation split, the final weights."""
        options = ["--checkpoint=last", "--split=valid", f"--beam_size={BEAM}", f"--threads={self.threads}"]
        return [
            str(self.run_dir(row)),
            *options,
            f"--device={self.device}",
            f"--data_dir={self.data_dir}",
            "--json",
        ]


def shown(module: str, args: list[str]) -> str:
    return shlex.join(["python", "-m", module, *args])


def config_of(row: Row, budget: Budget) -> TranslationConfig:
    """The row's config exactly as its training command parses it: an unknown key or a bad
    value is a ConfigError naming it."""
    return parse_cli(TranslationConfig, budget.train_args(row), default_config=None, description="")


def shared_runs(rows: list[Row], budget: Budget) -> dict[str, str]:
    """Each row's name -> the name of the row whose run it is (itself, or the first earlier row
    with the same config but for the run directory)."""

    def key(row: Row) -> str:
        resolved = to_dict(config_of(row, budget))
        del resolved["train"]["out_dir"]
        return json.dumps(resolved, sort_keys=True)

    first: dict[str, str] = {}
    return {row.name: first.setdefault(key(row), row.name) for row in rows}


def call(module: str, args: list[str], *, capture: bool = False) -> str:
    """Run `python -m module args` (its stdout returned when `capture`); a SIGTERM to the study
    reaches the child, which saves and stops, so the same study command resumes it."""
    stdout = subprocess.PIPE if capture else None
    with subprocess.Popen([sys.executable, "-m", module, *args], stdout=stdout, text=True) as child:
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
        try:
            out, _ = child.communicate()
        finally:
            signal.signal(signal.SIGTERM, previous)
    code = child.returncode
    if code in (128 + signal.SIGTERM, 128 + signal.SIGINT, -signal.SIGTERM, -signal.SIGINT):
        signum = abs(code) % 128
        raise Interrupted(f"stopped during `{shown(module, args)}`: run the study again to resume", signum)
    if code:
        raise UserError(f"`{shown(module, args)}` exited with code {code}")
    return out or ""


def finished(run_dir: Path, max_steps: int) -> bool:
    """The runner writes summary.json when a run reaches train.max_steps (not when stopped)."""
    path = run_dir / "summary.json"
    return path.is_file() and json.loads(path.read_text()).get("step", 0) >= max_steps


def logged_results(run_dir: Path, max_steps: int) -> dict[str, Any]:
    """What the runner measured and logged: parameters, the final validation, training minutes."""
    final = [r for r in read_metrics(run_dir, "valid") if r["step"] == max_steps]
    if not final:
        raise UserError(f"{run_dir}: no validation logged at step {max_steps} in metrics.jsonl")
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        "parameters": summary["parameters"],
        "nll": final[-1]["nll"],
        "ppl": final[-1]["ppl"],
        "bleu_greedy": final[-1]["bleu"],
        "chrf_greedy": final[-1]["chrf"],
        "train_minutes": training_seconds(read_metrics(run_dir)) / 60,
        "device": summary["device"],
    }


def training_seconds(records: list[dict], unit: str = "tokens") -> float:
    """Seconds in training steps: each train record closes a window of `UNIT / UNIT_per_s`
    seconds (the runner logs the task's unit: tokens, or words for the parsers), less the part of
    it spent in a validation (from the train record logged at a validation's step to the
    validation's own record)."""
    train = {r["step"]: r for r in records if r["split"] == "train"}
    validations = [
        (train[r["step"]]["time"], r["time"]) for r in records if r["split"] == "valid" and r["step"] in train
    ]
    total = 0.0
    for record in train.values():
        end = record["time"]
        start = end - record[unit] / record[f"{unit}_per_s"]
        overlap = sum(max(0.0, min(end, stop) - max(start, begin)) for begin, stop in validations)
        total += end - start - overlap
    return total


def beam_results(row: Row, budget: Budget) -> dict[str, Any]:
    """sacreBLEU of beam 4 on the validation split, from the task's evaluate command (its
    --json record is the last line it prints on stdout)."""
    args = budget.evaluate_args(row)
    record = json.loads(call(EVALUATE, args, capture=True).strip().splitlines()[-1])
    return {
        "evaluate": shown(EVALUATE, args),
        "bleu_beam4": record["bleu"],
        "chrf_beam4": record["chrf"],
        "alpha": record["alpha"],
        "bleu_signature": record["bleu_signature"],
    }


def measure(row: Row, budget: Budget, hardware: str) -> dict[str, Any]:
    """Train the row unless its run is finished, then measure what its study.json lacks."""
    run_dir = budget.run_dir(row)
    results = cached_results(row, budget) or {}
    if "bleu_beam4" in results:
        return results
    if not finished(run_dir, budget.max_steps):
        call(TRAIN, budget.train_args(row))
    if "ppl" not in results:
        command = shown(TRAIN, budget.train_args(row))
        results = {"row": row.name, "step": budget.max_steps, "command": command, "hardware": hardware}
        results |= logged_results(run_dir, budget.max_steps)
        _write(run_dir, results)  # kept before the slower beam search
    results |= beam_results(row, budget)
    _write(run_dir, results)
    return results


def _write(run_dir: Path, results: dict[str, Any]) -> None:
    (run_dir / RESULTS_FILE).write_text(json.dumps(results, indent=2) + "\n")


def cached_results(row: Row, budget: Budget) -> dict[str, Any] | None:
    """The row's study.json at this budget, or None."""
    path = budget.run_dir(row) / RESULTS_FILE
    if not path.is_file():
        return None
    cached = json.loads(path.read_text())
    return cached if cached.get("step") == budget.max_steps else None


def default_data_dir() -> str:
    return os.environ.get("ZOO_DATA_DIR", "../shared/data")
