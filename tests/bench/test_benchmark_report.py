"""bench.benchmark_report on a hand-written pytest-benchmark file: each engine's rate over every
peer of its group, from the medians and the quartiles, and the table rows it writes per family."""

import json
from pathlib import Path

import pytest

from bench import benchmark_report


def bench(group: str, engine: str | None, median: float, q1: float, q3: float, per_call: int = 100) -> dict:
    info = (
        {}
        if engine is None
        else {"engine": engine, "per_call": per_call, "unit": "tokens", "preset": "small"}
    )
    stats = {"median": median, "q1": q1, "q3": q3, "rounds": 5, "min": q1, "max": q3, "mean": median}
    return {"group": group, "name": f"test[{engine}]", "extra_info": info, "stats": stats}


BEAM, TRAIN, GREEDY = (
    "translation beam4-random fp32 t=1",
    "translation train fp32 t=1",
    "gpt greedy b=1 fp32 t=1",
)
DATA = {
    "machine_info": {"cpu": {"brand_raw": "Test CPU", "count": 2}, "system": "Linux", "torch": "9.9.9"},
    "commit_info": {"id": "0123456789abcdef", "branch": "main", "dirty": False},
    "datetime": "2026-01-01T00:00:00",
    "version": "5.3.1",
    "bench": {"command": "python -m pytest bench --benchmark-only", "threads": 1, "load_average": 0.5},
    "benchmarks": [
        bench(BEAM, "generate", 2.0, 1.8, 2.5),  # a peer listed first: zoo still leads its group
        bench(BEAM, "zoo", 1.0, 0.9, 1.2),
        bench(BEAM, "ct2_fp32", 1.25, 1.0, 1.5),
        bench(TRAIN, "zoo", 0.5, 0.5, 0.5, per_call=1000),
        bench(TRAIN, "marian", 0.6, 0.6, 0.6, per_call=1000),
        bench(GREEDY, "zoo", 0.1, 0.1, 0.1, per_call=10),
        bench(GREEDY, "hf", 0.25, 0.25, 0.25, per_call=20),  # twice the tokens a call: rates, not times
        bench("forward n=64", None, 0.01, 0.01, 0.01),  # a layer micro-benchmark: no engine, no peer
    ],
}


def test_each_engine_against_each_peer_of_its_group_from_medians_and_quartiles() -> None:
    families = benchmark_report.records(benchmark_report.timings(DATA))

    assert set(families) == {"translation", "gpt"}
    beam = [r for r in families["translation"] if r["benchmark"].startswith("beam4")]
    assert [r["engine"] for r in beam] == ["zoo", "generate", "ct2_fp32"]
    zoo = beam[0]
    # rate = 100 tokens / median; low: zoo's slow quartile (1.2 s) against generate's fast one (1.8 s)
    assert zoo["vs"]["generate"] == pytest.approx((2.0 / 1.0, 1.8 / 1.2, 2.5 / 0.9))
    assert zoo["vs"]["ct2_fp32"] == pytest.approx((1.25 / 1.0, 1.0 / 1.2, 1.5 / 0.9))
    assert beam[1]["vs"]["ct2_fp32"] == pytest.approx((1.25 / 2.0, 1.0 / 2.5, 1.5 / 1.8))
    assert "marian" not in zoo["vs"]  # a peer of another group
    assert zoo["rate"] == pytest.approx(100.0) and zoo["iqr_ms"] == pytest.approx(300.0)
    greedy = families["gpt"][0]
    assert greedy["vs"]["hf"][0] == pytest.approx((10 / 0.1) / (20 / 0.25))  # 1.25x, though 2.5x the time


def test_one_page_per_family_with_a_column_per_peer(tmp_path: Path) -> None:
    source = tmp_path / "run.json"
    source.write_text(json.dumps(DATA))

    benchmark_report.main([str(source), "--out", str(tmp_path / "out")])

    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "benchmark_gpt.md",
        "benchmark_translation.md",
    ]
    page = (tmp_path / "out" / "benchmark_translation.md").read_text().splitlines()
    header = page.index(next(line for line in page if line.startswith("| benchmark |")))
    assert page[header].endswith(
        "| vs generate (quartiles) | vs ct2_fp32 (quartiles) | vs marian (quartiles) |"
    )
    assert page[header + 2 :] == [
        "| beam4-random fp32 t=1 | zoo | small | 5 | 1000.00 | 300.00 | 100 | tokens | 100 "
        "| 2.00x (1.50-2.78) | 1.25x (0.83-1.67) | - |",
        "| beam4-random fp32 t=1 | generate | small | 5 | 2000.00 | 700.00 | 100 | tokens | 50 "
        "| 1.00x (0.72-1.39) | 0.62x (0.40-0.83) | - |",
        "| beam4-random fp32 t=1 | ct2_fp32 | small | 5 | 1250.00 | 500.00 | 100 | tokens | 80 "
        "| 1.60x (1.20-2.50) | 1.00x (0.67-1.50) | - |",
        "| train fp32 t=1 | zoo | small | 5 | 500.00 | 0.00 | 1,000 | tokens | 2,000 "
        "| - | - | 1.20x (1.20-1.20) |",
        "| train fp32 t=1 | marian | small | 5 | 600.00 | 0.00 | 1,000 | tokens | 1,667 "
        "| - | - | 1.00x (1.00-1.00) |",
    ]
    text = "\n".join(page)
    assert "commit 0123456789ab on main" in text and "Test CPU, 2 CPUs" in text and "torch 9.9.9" in text


def test_a_file_that_is_not_pytest_benchmarks_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    source = tmp_path / "other.json"
    source.write_text(json.dumps({"rows": []}))

    with pytest.raises(SystemExit) as exit_:
        benchmark_report.main([str(source), "--out", str(tmp_path)])

    assert exit_.value.code == 2
    assert (
        capsys.readouterr().err.strip()
        == f"error: {source}: not a pytest-benchmark file (no 'benchmarks' list)"
    )


RECORDED = Path(__file__).resolve().parents[2] / "bench" / "results"


@pytest.mark.parametrize(
    "source, folder",
    [
        ("benchmark_cpu_t1.json", ""),
        ("benchmark_int8_onnx/benchmark_cpu_t1.json", "benchmark_int8_onnx"),
        ("benchmark_zen4/cpu_t1.json", "benchmark_zen4/t1"),
        ("benchmark_zen4/cpu_t2.json", "benchmark_zen4/t2"),
        ("benchmark_zen4_system_malloc/cpu_t1.json", "benchmark_zen4_system_malloc/t1"),
        ("benchmark_zen4_system_malloc/cpu_t2.json", "benchmark_zen4_system_malloc/t2"),
        *(
            (f"benchmark_zen4_frozen/gpt_{run}.json", f"benchmark_zen4_frozen/{run}")
            for run in (
                "micro_t1",
                "micro_t2",
                "micro_t2_rerun",
                "mini_t1",
                "mini_t2",
                "gpt2_small_t1",
                "gpt2_small_t2",
            )
        ),
        *(
            (f"benchmark_zen4_{run}/gpt_{preset}_t{t}.json", f"benchmark_zen4_{run}/{preset}_t{t}")
            for run in ("rows", "filled")
            for preset in ("micro", "mini", "gpt2_small")
            for t in (1, 2)
        ),
        *(
            (f"benchmark_zen4_filled/gpt_mini_int8_t{t}.json", f"benchmark_zen4_filled/mini_int8_t{t}")
            for t in (1, 2)
        ),
        *(
            (f"benchmark_zen4_steps/gpt_mini_int8_{run}.json", f"benchmark_zen4_steps/mini_int8_{run}")
            for run in ("t1", "t1_run2", "t2")
        ),
    ],
)
def test_the_recorded_tables_are_what_the_report_makes_of_their_json(source, folder, tmp_path, monkeypatch):
    """The committed benchmark_<family>.md pages are regenerated from the committed JSON they
    name: a table edited by hand, or a report changed without rewriting them, fails here."""
    pages_at = RECORDED / folder
    monkeypatch.chdir(RECORDED.parents[1])  # the pages name the JSON by its path from the root
    benchmark_report.main([str((RECORDED / source).relative_to(RECORDED.parents[1])), "--out", str(tmp_path)])
    pages = sorted(p.name for p in tmp_path.glob("benchmark_*.md"))
    assert pages and pages == sorted(p.name for p in pages_at.glob("benchmark_*.md"))
    for name in pages:
        assert (tmp_path / name).read_text() == (pages_at / name).read_text(), name
