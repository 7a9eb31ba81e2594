"""bench.studies.recurrent: reading a curve at a budget and at a BLEU against numpy, the equal-cost
comparison on known curves, a run's cumulative cost at each validation, the commands as the
recipes, and the study trained once and measured only where something is missing (a fake
trainer and evaluator stand in for the commands; the tokenizer statistics and the timing too)."""

from __future__ import annotations

import json
import random
import shlex
from pathlib import Path

import numpy as np
import pytest

from bench.studies import multi30k, recurrent, variations
from bench.studies.flops import forward_macs
from tasks.translation.config import TranslationConfig
from zoo.config import parse_cli


def random_curve(rng: random.Random) -> list[tuple[float, float]]:
    xs = np.cumsum([0.0] + [rng.uniform(0.5, 3) for _ in range(6)])
    return [(float(x), rng.uniform(0, 40) if x else 0.0) for x in xs]


@pytest.mark.parametrize("seed", range(5))
def test_reading_a_curve_agrees_with_numpy(seed):
    rng = random.Random(seed)
    points = random_curve(rng)
    xs, ys = map(np.array, zip(*points))
    for x in np.linspace(0, xs[-1], 37):
        assert recurrent.interpolated(points, x) == pytest.approx(np.interp(x, xs, ys))
    assert recurrent.interpolated(points, xs[-1] + 0.1) is None
    grid = np.linspace(0, xs[-1], 200_001)
    for target in (5.0, 20.0, 39.0):
        reached = grid[np.interp(grid, xs, ys) >= target]
        found = recurrent.first_reaching(points, target)
        assert (found is None) == (len(reached) == 0)
        if found is not None:
            assert found == pytest.approx(reached[0], abs=grid[1])


def test_equal_cost_and_cost_to_reach_on_known_curves():
    def model(points: list[tuple[float, float]]) -> dict:
        return {"curve": [{"minutes": m, "flops": 2 * m, "bleu": b} for m, b in points]}

    results = {"transformer": model([(10, 20), (20, 30)]), "rnn": model([(15, 10), (30, 25)])}
    out = recurrent.comparisons(results)
    assert out["equal_minutes"] == {"budget": 20, "transformer": 30, "rnn": pytest.approx(15)}
    assert out["equal_flops"] == {"budget": 40, "transformer": 30, "rnn": pytest.approx(15)}
    assert out["minutes_to_reach"] == {"bleu": 25, "transformer": pytest.approx(15), "rnn": 30}


def test_the_curve_counts_tokens_and_training_minutes_up_to_each_validation(tmp_path):
    # windows: step 5's from 40 to 100 s, step 10's from 130 to 220 s; validations in between
    records = [
        {"split": "train", "step": 5, "time": 100.0, "tokens": 600, "tokens_per_s": 10.0},  # 60 s
        {"split": "valid", "step": 5, "time": 130.0, "bleu": 7.0},  # 30 s of validation
        {"split": "valid", "step": 7, "time": 140.0, "bleu": 8.0},  # no train record at 7: left out
        {"split": "train", "step": 10, "time": 220.0, "tokens": 900, "tokens_per_s": 10.0},  # 90 s
        {"split": "valid", "step": 10, "time": 240.0, "bleu": 9.0},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert recurrent.curve(tmp_path, flops_per_token=2.0) == [
        {"step": 5, "minutes": 1.0, "flops": 1200.0, "bleu": 7.0},
        {"step": 10, "minutes": 2.5, "flops": 3000.0, "bleu": 9.0},
    ]


def test_the_printed_commands_are_the_recipes(capsys, tmp_path):
    recurrent.main(["--dry_run", "--out_root", str(tmp_path), "--data_dir", "data"])
    transformer, rnn = (shlex.split(line)[3:] for line in capsys.readouterr().out.splitlines())
    configs = [
        parse_cli(TranslationConfig, argv, default_config=None, description="") for argv in (transformer, rnn)
    ]
    assert configs[0].train.out_dir == str(tmp_path / "variations" / "base")
    assert configs[0].train.max_steps == multi30k.STUDY_STEPS and configs[0].model.arch == "transformer"
    assert configs[1].train.out_dir == str(tmp_path / "recurrent" / "rnn") and configs[1].model.arch == "rnn"
    assert configs[0].data == configs[1].data


class FakeCommands:
    """Stands in for the trainer (writes summary.json, metrics.jsonl with validations at the half
    and the end, test.json) and the evaluator (prints a --json record); remembers each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, module: str, args: list[str], *, capture: bool = False) -> str:
        flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
        if module == multi30k.TRAIN:
            run = Path(flags["train.out_dir"])
            self.calls.append(("train", run.name))
            self._train(run, int(flags["train.max_steps"]))
            return ""
        run = Path(args[0])
        self.calls.append(("evaluate", run.name, flags["split"], flags["beam_size"]))
        return "a note\n" + json.dumps({"bleu": len(run.name) + int(flags["beam_size"]), "chrf": 1.0,
                                        "alpha": 0.6, "bleu_signature": "sig"})  # fmt: skip

    @staticmethod
    def _train(run: Path, steps: int) -> None:
        run.mkdir(parents=True, exist_ok=True)
        (run / "summary.json").write_text(json.dumps({"step": steps, "parameters": 1000, "device": "cpu"}))
        (run / "test.json").write_text(json.dumps({"step": steps, "bleu": 3.0}))
        records = []
        for step, time in ((steps // 2, 100.0), (steps, 200.0)):
            records += [
                {"split": "train", "step": step, "time": time, "tokens": 500, "tokens_per_s": 10.0},
                {"split": "valid", "step": step, "time": time + 10, "nll": 1.0, "ppl": 2.7,
                 "bleu": float(step), "chrf": 1.0},
            ]  # fmt: skip
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCommands:
    commands = FakeCommands()
    for module in (multi30k, recurrent):
        monkeypatch.setattr(module, "call", commands)
    for module in (variations, recurrent):
        monkeypatch.setattr(module, "machine", lambda: {"cpu": "cpu", "cores": 2, "gpu": None, "torch": "x"})
    monkeypatch.setattr(recurrent, "corpus_lengths", lambda cfg, run_dir: ([(4, 6), (8, 6)], 100))
    speed = {"greedy": 10.0, "beam4": 5.0}
    monkeypatch.setattr(recurrent, "decoding_speed", lambda models, *a: {"sentences": 2, "threads": 1,
                        "repeats": 1, **{m.name: speed for m in models}})  # fmt: skip
    return commands


def test_the_study_trains_once_and_measures_only_what_is_missing(fake, tmp_path):
    runs = tmp_path / "runs"
    argv = ["--max_steps", "8", "--rnn_steps", "6", "--out_root", str(runs), "--out", str(tmp_path)]
    record = recurrent.main(argv)
    assert fake.calls == [
        ("train", "base"), ("evaluate", "base", "valid", "4"), ("evaluate", "base", "test", "1"),
        ("train", "rnn"), ("evaluate", "rnn", "valid", "4"), ("evaluate", "rnn", "test", "1"),
    ]  # fmt: skip
    rnn = record["models"]["rnn"]
    assert rnn["bleu"] == {"valid": {"greedy": 6.0, "beam4": 7}, "test": {"greedy": 4, "beam4": 3.0}}
    cfg = recurrent.contenders(multi30k.Budget(runs / "variations", "data"), runs, 6)[1].config()
    per_token = 6 * (forward_macs(cfg.model, 100, 4, 6) + forward_macs(cfg.model, 100, 8, 6)) / 12
    assert rnn["curve"] == [
        {"step": 3, "minutes": pytest.approx(50 / 60), "flops": 500 * per_token, "bleu": 3.0},
        {"step": 6, "minutes": pytest.approx(100 / 60), "flops": 1000 * per_token, "bleu": 6.0},
    ]
    assert record["equal_minutes"]["budget"] == pytest.approx(100 / 60)  # both ran 100 s
    for suffix in ("json", "md", "png"):
        assert (tmp_path / f"{recurrent.NAME}.{suffix}").is_file()

    fake.calls.clear()
    recurrent.main(argv)
    assert fake.calls == []  # everything cached

    summary = runs / "recurrent" / "rnn" / "summary.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "step": 2}))  # stopped at 2
    (runs / "recurrent" / "rnn.json").unlink()
    recurrent.main(argv)
    assert fake.calls == [
        ("train", "rnn"),
        ("evaluate", "rnn", "valid", "4"),
        ("evaluate", "rnn", "test", "1"),
    ]


def test_evals_space_the_validations_of_both_runs_on_logged_steps(tmp_path):
    """--evals validates each run that many times, each at a logged step (a multiple of the
    recipes' log_every), since the curves keep only those."""
    budget = multi30k.Budget(tmp_path / "variations", "data", max_steps=2000, evals=8)
    transformer, rnn = recurrent.contenders(budget, tmp_path, 1180)
    assert transformer.config().train.eval_every == 250
    assert rnn.config().train.eval_every == 125  # 1180 // 8 = 147, down to a multiple of 25
    assert "--train.eval_every=400" in multi30k.Budget(tmp_path, "data").flags()  # the study's two
