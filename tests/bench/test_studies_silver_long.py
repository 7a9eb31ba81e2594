"""The long silver student's figure: which evaluation records it draws, and that it draws."""

import json

from bench.studies.silver_long import main, scored_points
from zoo.train.metrics_log import read_metrics


def write(path, record):
    path.write_text(json.dumps(record))


def test_only_the_prefixed_test_records_are_drawn(tmp_path):
    write(tmp_path / "student40k_averaged_test_20000.json", {"split": "test", "step": 20000, "f1": 81.7})
    write(tmp_path / "student40k_averaged_dev_20000.json", {"split": "valid", "step": 20000, "f1": 80.2})
    write(tmp_path / "student_averaged_test.json", {"split": "test", "step": 17000, "f1": 76.4})
    write(tmp_path / "student40k_x_test_32000_cooldown.json", {"split": "test", "step": 32000, "f1": 83.6})
    points = scored_points(tmp_path, "student40k_")
    assert [(name, r["step"]) for name, r in points] == [
        ("student40k_averaged_test_20000.json", 20000),
        ("student40k_x_test_32000_cooldown.json", 32000),
    ]


def test_the_figure_is_written_from_the_metrics_copies(tmp_path, capsys):
    lines = [{"split": "train", "step": s, "lr": 1e-3 / s} for s in (1, 2, 3)]
    lines += [{"split": "valid", "step": 3, "f1": 50.0}]
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    write(tmp_path / "student40k_averaged_test_3.json", {"split": "test", "step": 3, "f1": 55.0})
    assert read_metrics(tmp_path / "m.jsonl", "valid") == lines[-1:]  # a copy, read by its own name
    main([str(tmp_path), "--runs", "m.jsonl", "--out", str(tmp_path / "f.png")])
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().out
