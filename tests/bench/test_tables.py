"""The docs pages' result tables match the JSON files they are generated from."""

import json
import shutil
from pathlib import Path

import pytest

from bench import tables


def test_docs_tables_are_in_sync_with_the_results(capsys) -> None:
    assert tables.main(["--check"]) == 0, capsys.readouterr().out


def test_every_table_a_page_asks_for_exists_and_every_table_is_used() -> None:
    pages = [page.read_text() for page in tables.DOCS.glob("*.md")]
    asked = {m.group("name") for text in pages for m in tables.MARKED.finditer(text)}
    assert asked == set(tables.TABLES)


def test_a_changed_figure_makes_the_check_fail_naming_the_page(tmp_path: Path, capsys) -> None:
    docs, results = tmp_path / "docs", tmp_path / "results"
    shutil.copytree(tables.DOCS, docs)
    shutil.copytree(tables.RESULTS, results, ignore=shutil.ignore_patterns("*.png", "*.txt", "*.log"))
    path = results / tables.CPU_BENCHMARKS[0]
    data = json.loads(path.read_text())
    vit = next(b for b in data["benchmarks"] if b["group"].startswith("vit train"))
    vit["stats"]["median"] /= 2  # twice the images a second
    path.write_text(json.dumps(data))

    assert tables.main(["--check", "--docs", str(docs), "--results", str(results)]) == 1
    out = capsys.readouterr().out
    assert "vit.md" in out and "bert.md" not in out

    assert tables.main(["--docs", str(docs), "--results", str(results)]) == 0  # regenerate
    assert tables.main(["--check", "--docs", str(docs), "--results", str(results)]) == 0
    rate = vit["extra_info"]["per_call"] / vit["stats"]["median"]
    assert f"| {rate:,.0f} |" in (docs / "vit.md").read_text()


def test_a_pytest_benchmark_table_keeps_the_groups_asked_for_and_refuses_a_file_without_them(
    tmp_path: Path,
) -> None:
    def bench(group: str, engine: str, median: float) -> dict:
        info = {"engine": engine, "per_call": 100, "unit": "tokens", "preset": "small"}
        return {
            "group": group,
            "extra_info": info,
            "stats": {"median": median, "q1": median, "q3": median, "rounds": 5},
        }

    data = {
        "benchmarks": [
            bench("translation beam4-random fp32 t=1", "zoo", 1.0),
            bench("translation beam4-random fp32 t=1", "ct2_fp32", 0.8),
            bench("translation train fp32 t=1", "zoo", 0.5),
            bench("translation train fp32 t=1", "marian", 1.0),
        ]
    }
    (tmp_path / "run.json").write_text(json.dumps(data))

    lines = tables.benchmarked("run.json", groups=("translation beam4",))(tmp_path)

    assert [line.split(" | ")[1] for line in lines[2:]] == ["zoo", "ct2_fp32"]  # no training rows
    assert "vs ct2_fp32" in lines[0] and "marian" not in lines[0]
    assert "| 0.80x (0.80-0.80) |" in lines[2]  # zoo: 100 tokens a second against 125
    with pytest.raises(LookupError, match="run.json: no benchmark group starts with vit"):
        tables.benchmarked("run.json", groups=("vit",))(tmp_path)


def test_unknown_table_names_the_known_ones(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- table: nope -->\n<!-- /table -->\n")
    with pytest.raises(KeyError, match="nope.*vit_speed"):
        tables.main(["--check", "--docs", str(tmp_path)])
