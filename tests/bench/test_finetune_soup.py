"""bench.finetune_soup: the soups are chosen on dev alone, and test is scored only after."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch
import yaml

from bench import finetune_soup
from tests.bench.test_finetune_grid import fake_run


def with_checkpoint(run: Path, weight: float) -> Path:
    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "checkpoints").mkdir()
    state = {"model": {"w": torch.tensor([weight])}, "config": yaml.safe_dump(config), "schema": "S"}
    torch.save(state, run / "checkpoints" / "best.pt")
    return run


def test_dev_chooses_the_greedy_soup_and_test_is_scored_last(tmp_path, monkeypatch, capsys):
    # Dev ranks a, b, c. The dev scorer rewards a soup weight near 2, the test scorer one near
    # 100, which would want c in the soup: it must not get a say.
    a = with_checkpoint(fake_run(tmp_path, "a", 16, [90.0], test=81.0), 1.0)
    b = with_checkpoint(fake_run(tmp_path, "b", 32, [89.0], test=80.0), 3.0)
    c = with_checkpoint(fake_run(tmp_path, "c", 64, [85.0], test=82.0), 95.0)
    calls = []

    def fake_evaluator(task, split, data_dir, threads):
        target = 2.0 if split == "valid" else 100.0

        def score(path):
            w = torch.load(path, weights_only=True)["model"]["w"].item()
            calls.append((split, Path(path).name))
            return -abs(w - target)

        return score

    monkeypatch.setattr(finetune_soup, "evaluator", fake_evaluator)
    out, soups = tmp_path / "out", tmp_path / "soups"
    argv = ["finetune_soup", str(c), str(a), str(b), "--task", "t", "--data_dir", "d", "--soups", str(soups)]
    monkeypatch.setattr(sys, "argv", [*argv, "--out", str(out)])
    finetune_soup.main()

    splits = [split for split, _ in calls]
    assert splits == ["valid"] * 4 + ["test"] * 2  # 3 greedy trials, the uniform soup, then test
    record = json.loads((out / "finetune_soup.json").read_text())
    assert [t["run"] for t in record["trials"]] == [str(a), str(b), str(c)]
    assert [t["joined"] for t in record["trials"]] == ["yes", "yes", ""]
    greedy, uniform = record["soups"]["greedy"], record["soups"]["uniform"]
    assert greedy["ingredients"] == [str(a / "checkpoints/best.pt"), str(b / "checkpoints/best.pt")]
    assert (greedy["dev"], greedy["test"]) == (0.0, -98.0)
    assert (uniform["dev"], uniform["test"]) == (-31.0, -67.0)
    assert "uniform soup of 3: dev -31.00, test -67.00" in capsys.readouterr().out
    assert sorted(p.name for p in (soups / "checkpoints").iterdir()) == ["greedy.pt", "uniform.pt"]


def test_a_run_without_its_checkpoint_is_one_line_and_exit_2(tmp_path):
    a = with_checkpoint(fake_run(tmp_path, "a", 16, [90.0]), 1.0)
    b = fake_run(tmp_path, "b", 32, [95.0])  # the best on dev, but its checkpoints are gone
    argv = [str(a), str(b), "--task", "bert_finetune", "--data_dir", "d", "--soups", str(tmp_path / "s")]
    done = subprocess.run(
        [sys.executable, "-m", "bench.finetune_soup", *argv, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: checkpoint not found: {b / 'checkpoints' / 'best.pt'}"
