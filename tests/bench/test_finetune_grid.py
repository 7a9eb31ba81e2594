"""bench.finetune_grid: each run's best dev score, the grid's choice by dev alone, refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from bench import finetune_grid


def fake_run(root: Path, name: str, batch: int, dev: list[float], test: float | None = None) -> Path:
    run = root / name
    run.mkdir()
    config = {"data": {"batch_size": batch}, "optim": {"lr": 3e-4}, "train": {"max_steps": 100 * len(dev)}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    records = [{"split": "valid", "step": 100 * (i + 1), "score": s} for i, s in enumerate(dev)]
    records.insert(0, {"split": "train", "step": 50, "loss": 0.7, "score": 99.0})  # not dev
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if test is not None:
        (run / "eval_test.json").write_text(json.dumps({"score": test}))
    return run


def test_the_run_with_the_best_dev_score_is_chosen_whatever_its_test_score(tmp_path, monkeypatch, capsys):
    a = fake_run(tmp_path, "a", 16, [80.0, 86.0, 85.0], test=90.0)
    b = fake_run(tmp_path, "b", 32, [84.0, 87.0, 87.0], test=81.0)
    c = fake_run(tmp_path, "c", 64, [70.0])  # not evaluated on test
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["finetune_grid", str(c), str(b), str(a), "--out", str(out)])
    finetune_grid.main()
    rows = json.loads((out / "finetune_grid.json").read_text())["rows"]
    assert [r["run"] for r in rows] == [str(a), str(b), str(c)]
    assert [(r["dev"], r["dev_step"], r["test"]) for r in rows] == [
        (86.0, 200, 90.0),
        (87.0, 200, 81.0),
        (70.0, 100, None),
    ]
    assert [r["chosen"] for r in rows] == ["", "yes", ""]
    assert not (out / "finetune_grid.png").exists()  # c has no test score to draw
    chosen_line = next(line for line in (out / "finetune_grid.md").read_text().splitlines() if "yes" in line)
    assert chosen_line.startswith(f"| {b} | 32 |")
    assert chosen_line in capsys.readouterr().out


def test_an_unfinished_run_is_refused_by_name(tmp_path):
    run = fake_run(tmp_path, "a", 16, [80.0, 86.0])
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["train"]["max_steps"] = 1000
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(SystemExit, match=r"a: unfinished \(last dev score at step 200 of 1000\)"):
        finetune_grid.grid_row(run, "score")


def test_the_figure_is_drawn_once_every_run_has_a_test_score(tmp_path, monkeypatch):
    runs = [fake_run(tmp_path, "a", 16, [80.0], test=81.0), fake_run(tmp_path, "b", 32, [82.0], test=80.0)]
    monkeypatch.setattr(sys, "argv", ["finetune_grid", *map(str, runs), "--out", str(tmp_path / "out")])
    finetune_grid.main()
    assert (tmp_path / "out" / "finetune_grid.png").read_bytes().startswith(b"\x89PNG")
