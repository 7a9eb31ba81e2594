"""bench.studies.variations: every row is a valid recipe change, rows equal to the base are its
run, finished and measured rows are not redone, and the table comes from the cached results
(a fake trainer and evaluator stand in for the commands)."""

from __future__ import annotations

import json
import shlex
from functools import reduce
from pathlib import Path

import pytest

from bench.studies import multi30k, variations
from bench.studies.multi30k import Budget, Row, config_of, shared_runs, training_seconds
from tasks.translation.config import TranslationConfig
from zoo.config import ConfigError, parse_cli, to_dict

BUDGET = Budget(Path("runs/studies/test"), "data", max_steps=8, threads=1)


def value_at(cfg: TranslationConfig, key: str) -> object:
    return reduce(lambda node, part: node[part], key.split("."), to_dict(cfg))


@pytest.mark.parametrize("row", variations.ROWS, ids=lambda row: row.name)
def test_every_row_sets_its_keys_in_the_translation_config(row: Row) -> None:
    cfg = config_of(row, BUDGET)
    assert {key: value_at(cfg, key) for key in row.overrides} == row.overrides
    assert cfg.train.out_dir == str(BUDGET.run_dir(row))


def test_a_misspelt_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="num_head"):
        shared_runs([variations.BASE, Row("typo", "A", {"model.num_head": 2})], BUDGET)


def test_rows_equal_to_the_base_are_its_run() -> None:
    base = config_of(variations.BASE, BUDGET)
    # The reference: a row is the base when every value it sets is already the base's.
    expected = {
        row.name: "base" if all(value_at(base, k) == v for k, v in row.overrides.items()) else row.name
        for row in variations.ROWS
    }
    assert shared_runs(variations.ROWS, BUDGET) == expected
    assert {name for name, run in expected.items() if run == "base"} == {
        "base", "A-heads4", "D-dropout0.3", "D-ls0.1", "E-sinusoidal", "scores-scaled_dot",
    }  # fmt: skip


def test_the_printed_commands_parse_to_the_rows_configs() -> None:
    runs = shared_runs(variations.ROWS, BUDGET)
    lines = variations.dry_run(variations.ROWS, runs, BUDGET).splitlines()
    train_lines = [shlex.split(line) for line in lines if line.startswith(f"python -m {multi30k.TRAIN}")]
    assert len(train_lines) == len(set(runs.values()))
    by_dir = {str(BUDGET.run_dir(row)): row for row in variations.ROWS}
    for argv in train_lines:
        cfg = parse_cli(TranslationConfig, argv[3:], default_config=None, description="")
        assert cfg == config_of(by_dir[cfg.train.out_dir], BUDGET)


def test_training_seconds_leave_out_validations_and_stops() -> None:
    def train(step: int, end: float, seconds: float) -> dict:
        return {"split": "train", "step": step, "time": end, "tokens": 10 * seconds, "tokens_per_s": 10.0}

    records = [
        train(2, 10, 10),
        train(4, 20, 10),
        {"split": "valid", "step": 4, "time": 25},  # a 5 s validation after step 4's record
        train(6, 35, 15),  # its window holds that validation
        train(8, 45, 10),
        {"split": "valid", "step": 8, "time": 50},
        train(10, 2000, 10),  # resumed after a stop: its window starts at the resumed loop
    ]
    assert training_seconds(records) == pytest.approx(50.0)


class FakeCommands:
    """Stands in for `python -m` of the trainer and the evaluator: writes what the runner writes
    (summary.json, metrics.jsonl) and prints what evaluate --json prints; remembers each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, module: str, args: list[str], *, capture: bool = False) -> str:
        if module == multi30k.TRAIN:
            flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
            run = Path(flags["train.out_dir"])
            self.calls.append(("train", run.name))
            self._train(run, int(flags["train.max_steps"]))
            return ""
        run = Path(args[0])
        self.calls.append(("evaluate", run.name))
        return "a note on stdout\n" + json.dumps(
            {"bleu": self.score(run) + 1, "chrf": 50.0, "alpha": 0.6, "bleu_signature": "sig"}
        )

    @staticmethod
    def score(run: Path) -> float:
        return float(len(run.name))  # differs between the rows of the test

    def _train(self, run: Path, steps: int) -> None:
        run.mkdir(parents=True, exist_ok=True)
        summary = {"step": steps, "parameters": 1000 * len(run.name), "device": "cpu"}
        (run / "summary.json").write_text(json.dumps(summary))
        records = [
            {"split": "train", "step": steps, "time": 60.0, "tokens": 600, "tokens_per_s": 10.0},
            {"split": "valid", "step": steps, "time": 70.0, "nll": 1.0, "ppl": self.score(run) / 2,
             "bleu": self.score(run), "chrf": 40.0},
        ]  # fmt: skip
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCommands:
    commands = FakeCommands()
    monkeypatch.setattr(multi30k, "call", commands)
    monkeypatch.setattr(variations, "machine", lambda: {"cpu": "cpu", "cores": 2, "gpu": None, "torch": "x"})
    return commands


def test_rows_are_trained_once_and_measured_only_where_missing(fake: FakeCommands, tmp_path: Path) -> None:
    argv = ["--rows", "A", "--max_steps", "8", "--out_root", str(tmp_path / "runs"), "--out", str(tmp_path)]
    variations.main(argv)
    trained = {"base", "A-heads1", "A-heads2", "A-heads8"}  # heads 4 is the base's run
    assert sorted(fake.calls) == sorted([("train", n) for n in trained] + [("evaluate", n) for n in trained])

    fake.calls.clear()
    variations.main(argv)
    assert fake.calls == []  # every row cached

    cached = tmp_path / "runs" / "A-heads1" / multi30k.RESULTS_FILE
    results = json.loads(cached.read_text())
    cached.write_text(json.dumps({k: v for k, v in results.items() if k != "bleu_beam4"}))
    (tmp_path / "runs" / "A-heads2" / multi30k.RESULTS_FILE).unlink()
    summary = tmp_path / "runs" / "A-heads8" / "summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "step": 4}))  # stopped at 4
    (tmp_path / "runs" / "A-heads8" / multi30k.RESULTS_FILE).unlink()
    variations.main(argv)
    remeasured = [("evaluate", "A-heads1"), ("evaluate", "A-heads2"), ("evaluate", "A-heads8")]
    assert sorted(fake.calls) == [*remeasured, ("train", "A-heads8")]  # only the stopped run trains


def test_another_seed_trains_the_rows_apart_and_reports_apart(fake: FakeCommands, tmp_path: Path) -> None:
    argv = ["--rows", "base", "--seed", "3", "--max_steps", "8", "--out", str(tmp_path)]
    assert variations.arguments(argv).out_root == multi30k.OUT_ROOT / "variations-seed3"
    variations.main([*argv, "--out_root", str(tmp_path / "runs")])
    assert fake.calls == [("train", "base"), ("evaluate", "base")]
    results = tmp_path / "runs" / "base" / multi30k.RESULTS_FILE
    assert "--train.seed=3" in shlex.split(json.loads(results.read_text())["command"])
    assert (tmp_path / f"{variations.NAME}_seed3.md").is_file()
    assert not (tmp_path / f"{variations.NAME}.md").exists()  # the main table is untouched
    assert "--train.seed" not in " ".join(BUDGET.flags())  # seed 0: the commands as before


def test_the_table_is_assembled_from_the_cached_results(fake: FakeCommands, tmp_path: Path) -> None:
    runs_dir = tmp_path / "runs"
    argv = ["--rows", "base,E", "--max_steps", "8", "--out_root", str(runs_dir), "--out", str(tmp_path)]
    variations.main(argv)
    for name in ("base", "E-learned"):  # what a finished study would hold: the table reads it back
        path = runs_dir / name / multi30k.RESULTS_FILE
        path.write_text(json.dumps({**json.loads(path.read_text()), "ppl": 3.25 if name == "base" else 4.5}))
    variations.main(argv)
    record = json.loads((tmp_path / f"{variations.NAME}.json").read_text())
    rows = {row["name"]: row for row in record["rows"]}
    cached = json.loads((runs_dir / "base" / multi30k.RESULTS_FILE).read_text())
    assert rows["base"]["results"] == rows["E-sinusoidal"]["results"] == cached
    assert rows["E-learned"]["results"]["ppl"] == 4.5
    assert rows["A-heads1"]["results"] is None  # not measured: '-' in the table
    table = {
        line.split(" | ")[1]: line
        for line in (tmp_path / f"{variations.NAME}.md").read_text().splitlines()
        if line.startswith("| ")
    }
    assert "| 3.25 |" in table["base"] and "| 3.25 |" in table["E-sinusoidal"]
    assert "(= base)" in table["E-sinusoidal"] and "| 4.50 |" in table["E-learned"]
    assert table["A-heads1"].endswith("| - | - | - | - | - |")
    assert (tmp_path / f"{variations.NAME}.png").is_file()


def test_a_fresh_cache_keeps_the_earlier_reports_rows_at_the_same_budget(
    fake: FakeCommands, tmp_path: Path
) -> None:
    """A new checkout has no runs: retraining one row must not blank the rows measured before."""
    out = ["--max_steps", "8", "--out", str(tmp_path)]
    variations.main(["--rows", "base,E-learned", "--out_root", str(tmp_path / "old"), *out])
    variations.main(["--rows", "A-heads2", "--out_root", str(tmp_path / "new"), *out])
    rows = {
        row["name"]: row["results"]
        for row in json.loads((tmp_path / f"{variations.NAME}.json").read_text())["rows"]
    }
    assert rows["base"]["ppl"] == FakeCommands.score(Path("base")) / 2
    assert rows["E-learned"]["bleu_beam4"] == FakeCommands.score(Path("E-learned")) + 1
    assert rows["A-heads2"]["ppl"] == FakeCommands.score(Path("A-heads2")) / 2
    assert rows["A-heads1"] is None

    variations.main(
        [
            "--rows",
            "A-heads2",
            "--out_root",
            str(tmp_path / "other"),
            "--max_steps",
            "6",
            "--out",
            str(tmp_path),
        ]
    )
    rows = {
        row["name"]: row["results"]
        for row in json.loads((tmp_path / f"{variations.NAME}.json").read_text())["rows"]
    }
    assert rows["base"] is None and rows["A-heads2"]["step"] == 6  # another budget: nothing kept
