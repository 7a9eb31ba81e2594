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
    path = results / "vit_speed_zen5.json"
    data = json.loads(path.read_text())
    data["rows"][0]["ratio"] += 0.5
    path.write_text(json.dumps(data))

    assert tables.main(["--check", "--docs", str(docs), "--results", str(results)]) == 1
    out = capsys.readouterr().out
    assert "vit.md" in out and "bert.md" not in out

    assert tables.main(["--docs", str(docs), "--results", str(results)]) == 0  # regenerate
    assert tables.main(["--check", "--docs", str(docs), "--results", str(results)]) == 0
    assert f"| {data['rows'][0]['ratio']:.2f}x |" in (docs / "vit.md").read_text()


def test_unknown_table_names_the_known_ones(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- table: nope -->\n<!-- /table -->\n")
    with pytest.raises(KeyError, match="nope.*vit_speed"):
        tables.main(["--check", "--docs", str(tmp_path)])
