"""bench.studies.silver: the commands are the recipes with each size's silver file, the smaller
silver files are the first trees of the largest, and the study trains, parses and tests once,
measuring only what is missing (a fake trainer, silver parser and evaluator stand in)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from bench.studies import silver

TREE = "(S (NP (DT The) (NN dog)) (VP (VBD ran)))\n"


def test_the_printed_commands_are_the_recipes_with_each_sizes_silver(capsys, tmp_path):
    silver.main(["--dry_run", "--out_root", str(tmp_path), "--data_dir", "data", "--sizes", "0", "5", "20",
                 "--student_steps", "30"])  # fmt: skip
    lines = [shlex.split(line) for line in capsys.readouterr().out.splitlines()]
    assert [line[2] for line in lines] == [silver.TRAIN, silver.SILVER] + [silver.TRAIN, silver.EVALUATE] * 3
    teacher = silver.config(lines[0][3:])
    assert teacher.model.kind == "chart" and teacher.model.pretrained == "runs/minilm"
    assert "--limit=20" in lines[1] and f"--output={tmp_path / 'silver' / 'silver-20.mrg'}" in lines[1]
    students = [silver.config(line[3:]) for line in lines[2::2]]
    assert [s.data.extra_train for s in students] == [
        [],
        [str(tmp_path / "silver" / "silver-5.mrg")],
        [str(tmp_path / "silver" / "silver-20.mrg")],
    ]
    assert {(s.model.kind, s.model.word_pointer, s.train.max_steps) for s in students} == {
        ("seq2seq", False, 30)
    }
    assert [line[3] for line in lines[3::2]] == [
        str(tmp_path / "silver" / f"student-{n}") for n in (0, 5, 20)
    ]


def test_bf16_reaches_the_teacher_the_silver_parse_and_the_students_but_not_fp32s_commands(capsys, tmp_path):
    def commands(*extra: str) -> list[list[str]]:
        silver.main(["--dry_run", "--out_root", str(tmp_path), "--data_dir", "data", "--sizes", "0", "5",
                     *extra])  # fmt: skip
        return [shlex.split(line) for line in capsys.readouterr().out.splitlines()]

    bf16 = commands("--precision", "bf16")
    trained = [silver.config(line[3:]) for line in bf16 if line[2] == silver.TRAIN]
    assert [c.train.precision for c in trained] == ["bf16"] * 3  # the teacher and both students
    assert "--precision=bf16" in next(line for line in bf16 if line[2] == silver.SILVER)
    assert not any("precision" in word for line in commands() for word in line)


@pytest.mark.parametrize("sizes", [["5", "3"], ["-1", "4"], ["2", "2"]])
def test_sizes_must_increase_from_zero_up(sizes, capsys):
    with pytest.raises(SystemExit) as stop:
        silver.main(["--dry_run", "--sizes", *sizes])
    assert stop.value.code == 2 and "--sizes" in capsys.readouterr().err


class FakeCommands:
    """The trainer (summary.json, metrics.jsonl with two validations), the silver parser (N
    numbered trees) and the evaluator (a --json record); remembers each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, module: str, args: list[str], *, capture: bool = False) -> str:
        flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
        if module == silver.TRAIN:
            run = Path(flags["train.out_dir"])
            self.calls.append(("train", run.name, flags.get("data.extra_train", "")))
            self._train(run, int(flags.get("train.max_steps", 1500)))
            return ""
        if module == silver.SILVER:
            self.calls.append(("silver", flags["limit"]))
            Path(flags["output"]).write_text(
                "".join(TREE.replace("dog", f"dog{i}") for i in range(int(flags["limit"])))
            )
            return ""
        self.calls.append(("evaluate", Path(args[0]).name))
        f1 = 50.0 + len(Path(args[0]).name)
        record = {"f1": f1, "precision": 1, "recall": 2, "exact": 3, "beam_size": 21, "sentences_per_s": 4}
        return "a table\n" + json.dumps(record)

    @staticmethod
    def _train(run: Path, steps: int) -> None:
        run.mkdir(parents=True, exist_ok=True)
        (run / "summary.json").write_text(json.dumps({"step": steps}))
        records = [
            {"split": "train", "step": steps // 2, "time": 100.0, "words": 600, "words_per_s": 10.0},
            {"split": "valid", "step": steps // 2, "time": 110.0, "f1": 40.0},
            {"split": "train", "step": steps, "time": 200.0, "words": 600, "words_per_s": 10.0},
            {"split": "valid", "step": steps, "time": 210.0, "f1": 30.0},
        ]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCommands:
    commands = FakeCommands()
    monkeypatch.setattr(silver, "call", commands)
    monkeypatch.setattr(silver, "machine", lambda: {"cpu": "cpu", "cores": 2, "gpu": None, "torch": "x"})
    return commands


def test_the_study_parses_trains_and_tests_once(fake, tmp_path):
    runs, folder = tmp_path / "runs", tmp_path / "runs" / "silver"
    argv = ["--sizes", "0", "2", "5", "--student_steps", "8", "--out_root", str(runs), "--out", str(tmp_path)]
    record = silver.main(argv)
    assert fake.calls == [
        ("train", "teacher", ""), ("silver", "5"),
        ("train", "student-0", "[]"), ("evaluate", "student-0"),
        ("train", "student-2", f"[{folder / 'silver-2.mrg'}]"), ("evaluate", "student-2"),
        ("train", "student-5", f"[{folder / 'silver-5.mrg'}]"), ("evaluate", "student-5"),
        ("evaluate", "teacher"),
    ]  # fmt: skip
    assert (folder / "silver-2.mrg").read_text().splitlines() == (
        folder / "silver-5.mrg"
    ).read_text().splitlines()[:2]
    assert [s["silver"] for s in record["students"]] == [0, 2, 5]
    first = record["students"][0]
    assert (first["dev_f1_best"], first["dev_best_step"], first["test_f1"]) == (40.0, 4, 59.0)
    assert first["train_minutes"] == pytest.approx(2.0)  # two 60 s windows
    assert record["teacher"]["test_f1"] == 57.0
    for suffix in ("json", "md", "png"):
        assert (tmp_path / f"{silver.NAME}.{suffix}").is_file()

    fake.calls.clear()
    silver.main(argv)
    assert fake.calls == []  # everything cached

    (folder / "student-5" / silver.RESULTS_FILE).unlink()
    summary = folder / "student-5" / "summary.json"
    summary.write_text(json.dumps({"step": 3}))  # stopped at 3
    silver.main(argv)
    assert fake.calls == [("train", "student-5", f"[{folder / 'silver-5.mrg'}]"), ("evaluate", "student-5")]


def test_a_silver_file_shorter_than_a_size_is_refused(tmp_path, capsys):
    source = tmp_path / "all.mrg"
    source.write_text(TREE * 3)
    with pytest.raises(silver.UserError, match="3 silver trees, fewer than the 4"):
        silver.first_trees(source, 4, tmp_path / "four.mrg")
    assert not (tmp_path / "four.mrg").exists()


def test_the_silver_recipe_keeps_the_plain_recipes_model_and_search():
    """The semi-supervised student is the plain seq2seq parser, only trained on more trees: any
    change of model or search between the two recipes would mix two effects in the curve."""
    plain = silver.config(["--config", "configs/parsing/ptb_sample_seq2seq.yaml"])
    student = silver.config(["--config", "configs/parsing/ptb_sample_seq2seq_silver.yaml"])
    assert student.model == plain.model
    assert student.decode == plain.decode
    assert student.label_smoothing == plain.label_smoothing
    assert (student.data.unk_prob, student.data.path) == (plain.data.unk_prob, plain.data.path)
