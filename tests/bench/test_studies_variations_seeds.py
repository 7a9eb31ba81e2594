"""bench.studies.variations_seeds: every row measured under two seeds or more, with mean and range."""

import json

import pytest

from bench.studies.variations_seeds import across_seeds, markdown, seed_reports


def row(name, changes, bleu, ppl=20.0, runs_as=None):
    results = None if bleu is None else {"ppl": ppl, "bleu_beam4": bleu, "hardware": "cpu"}
    return {"name": name, "changes": changes, "runs_as": runs_as or name, "results": results}


def write(path, rows):
    hardware = {"cpu": "x86", "cores": 2, "gpu": None, "torch": "2"}
    path.write_text(json.dumps({"rows": rows, "hardware": hardware}))


def test_rows_under_two_seeds_get_mean_and_range_and_aliases_and_single_seeds_are_left_out(tmp_path):
    write(tmp_path / "studies_variations.json", [
        row("base", "", 16.0), row("A-heads4", "num_heads=4", None, runs_as="base"),
        row("A-heads2", "num_heads=2", 19.5), row("B-dk16", "key_dim=16", 10.9)])  # fmt: skip
    write(tmp_path / "studies_variations_seed1.json", [
        row("base", "", 16.5), row("A-heads4", "num_heads=4", None, runs_as="base"),
        row("A-heads2", "num_heads=2", 18.5), row("B-dk16", "key_dim=16", None)])  # fmt: skip
    (tmp_path / "studies_variations_seeds.json").write_text("[]")  # this command's own output
    reports = seed_reports(tmp_path)
    assert sorted(reports) == [0, 1]
    rows = across_seeds(reports)
    assert [r["name"] for r in rows] == ["base", "A-heads2"]
    assert rows[1]["mean"] == pytest.approx(19.0) and rows[1]["range"] == pytest.approx(1.0)
    table = markdown(rows, [0, 1])
    assert "| A-heads2 | num_heads=2 | 20.00 / 19.50 | 20.00 / 18.50 | 19.00 | 1.00 | +2.75 |" in table
