"""The benches write their Markdown table as bench.tables renders their JSON: each bench's main()
runs with its measurement replaced by made-up figures (nothing is timed), and the table in its
NAME.md is the one bench.tables gives for its NAME.json (the docs' tables for runner_overhead; the
shims' own, SHIM_TABLES, for the peer shims whose docs tables come from pytest-benchmark; bench.gpu's
decode tables: tests/bench/test_gpu_report.py)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest

from bench import attention_speed, bert_speed, runner_overhead, vit_speed
from bench.tables import SHIM_TABLES, TABLES


def docs_table(name: str, json_path: Path, tmp_path: Path) -> list[str]:
    """The table `name` (a shim's where it has one), rendered from this one file (as bench.tables
    reads it)."""
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    shutil.copy(json_path, results / json_path.name)
    return dataclasses.replace({**TABLES, **SHIM_TABLES}[name], files=(json_path.name,)).render(results)


def assert_has_table(text: str, table: list[str]) -> None:
    lines = text.splitlines()
    assert table[0] in lines, text
    start = lines.index(table[0])
    assert lines[start : start + len(table)] == table
    assert len(table) > 2  # a header, its rule and at least one row


def run_main(monkeypatch, module, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", [f"python -m bench.{module.__name__}", *argv])
    module.main()


def test_vit_speed(monkeypatch, tmp_path: Path) -> None:
    rows = [
        {"mode": m, "precision": p, "zoo_images_per_s": 1234.5, "timm_images_per_s": 85.0, "ratio": 1.98}
        for m in ("train", "fwd+bwd", "infer")
        for p in ("fp32", "bf16")
    ]
    setup = {"preset": "small", "img_size": 32, "batch": 64, "parameters": 2693578}
    monkeypatch.setattr(vit_speed, "run", lambda *args: (rows, setup))
    run_main(monkeypatch, vit_speed, "--out", str(tmp_path))
    assert json.loads((tmp_path / "vit_speed.json").read_text())["rows"] == rows
    table = docs_table("vit_speed", tmp_path / "vit_speed.json", tmp_path)
    assert "| train | fp32 | 1,234 | 85 | 1.98x |" in table
    assert_has_table((tmp_path / "vit_speed.md").read_text(), table)


def test_bert_speed(monkeypatch, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    rows = [
        {
            "precision": p,
            "zoo_tokens_per_s": 1119.8,
            "hf_tokens_per_s": 429.9,
            "ratio": 2.6,
            "zoo_every_position_tokens_per_s": 900.0,
        }
        for p in ("fp32", "bf16")
    ]
    setup = {"preset": "tiny", "hidden_size": 128, "num_hidden_layers": 2, "vocab_size": 8192, "batch": 32}
    monkeypatch.setattr(bert_speed, "run", lambda *args: (rows, setup))
    run_main(monkeypatch, bert_speed, "--preset", "tiny", "--out", str(tmp_path))
    assert json.loads((tmp_path / "bert_speed_tiny.json").read_text())["rows"] == rows
    table = docs_table("bert_speed", tmp_path / "bert_speed_tiny.json", tmp_path)
    assert "| tiny | 2 | 128 | 8192 | fp32 | 1,120 | 430 | 2.60x | 900 |" in table[2]
    assert_has_table((tmp_path / "bert_speed_tiny.md").read_text(), table)


def test_attention_speed(monkeypatch, tmp_path: Path) -> None:
    rows = [
        {"B": 8, "T": 64, "D": 256, "H": 4, "causal": c, "zoo_ms": 14.08, "torch_ms": 17.1, "ratio": 1.21}
        for c in (False, True)
    ]
    monkeypatch.setattr(attention_speed, "run", lambda *args: rows)
    run_main(monkeypatch, attention_speed, "--dtype", "bf16", "--out", str(tmp_path))
    data = json.loads((tmp_path / "attention_speed_cpu_bf16.json").read_text())
    assert data["rows"] == rows and data["dtype"] == "bf16"
    assert (
        data["command"]
        == "python -m bench.attention_speed --device cpu --dtype bf16 --repeats 15 --threads 0"
    )
    table = docs_table("attention_speed", tmp_path / "attention_speed_cpu_bf16.json", tmp_path)
    assert table[2].startswith("| 8 | 64 | 256 | 4 | False | bf16 | 14.08 | 17.10 | 1.21x | ")
    assert_has_table((tmp_path / "attention_speed_cpu_bf16.md").read_text(), table)


def test_runner_overhead(monkeypatch, tmp_path: Path) -> None:
    def timed(fn, cfg, steps: int) -> float:  # seconds: 30 ms a step in the runner, 29 bare
        return steps * (0.030 if fn is runner_overhead.runner_loop else 0.029)

    monkeypatch.setattr(runner_overhead, "timed", timed)
    run_main(monkeypatch, runner_overhead, "--steps", "12", "--repeats", "1", "--out", str(tmp_path))
    data = json.loads((tmp_path / "runner_overhead.json").read_text())
    assert data["command"] == "python -m bench.runner_overhead --steps 12 --repeats 1 --threads 0"
    assert data["runner_ms_per_step"] == pytest.approx(30.0)
    table = docs_table("runner_overhead", tmp_path / "runner_overhead.json", tmp_path)
    assert table[2].startswith("| 30.00 | 29.00 | +3.4% | ")
    assert_has_table((tmp_path / "runner_overhead.md").read_text(), table)
