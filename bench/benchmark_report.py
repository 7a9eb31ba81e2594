"""Ratio tables from a pytest-benchmark JSON file of the peer benches (bench/conftest.py).

    python -m bench.benchmark_report FILE.json [--out runs/bench]

FILE is what `python -m pytest bench --benchmark-only --benchmark-json FILE` writes, or a run that
--benchmark-save kept under .benchmarks/. Writes OUT/benchmark_<family>.md for each family (the
first word of a group: translation, gpt, bert, vit, attention), with the machine, library
versions and commit that the file records.

A group is one measured thing at one precision and thread count. In it, every engine is set
against each peer of the group (an engine whose name does not start with "zoo"): its rate
(units per call / median seconds) over the peer's, and a range from the quartiles, from its
slow quartile against the peer's fast one to the converse. Benchmarks without an engine in
their extra_info (the layer micro-benchmarks of test_layers_speed.py) have no peer: left out.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from bench.output import add_out_option
from bench.tables import RATE, Column, markdown
from zoo.cli import main_guard
from zoo.config import UserError

PEER_PACKAGES = ("torch", "transformers", "ctranslate2", "timm")


@dataclass(frozen=True)
class Timing:
    """One benchmark of the file: seconds per call (median and quartiles) and what a call does."""

    group: str
    engine: str
    per_call: float
    unit: str
    preset: str
    rounds: int
    median: float
    q1: float
    q3: float

    @property
    def family(self) -> str:
        return self.group.split()[0]

    @property
    def is_peer(self) -> bool:
        return not self.engine.startswith("zoo")

    def rate(self, seconds: float) -> float:
        return self.per_call / seconds


def timings(data: dict) -> list[Timing]:
    """The benchmarks that name their engine, in the file's order."""
    found = []
    for bench in data["benchmarks"]:
        info, stats = bench.get("extra_info", {}), bench["stats"]
        if "engine" not in info:
            continue
        found.append(
            Timing(
                group=bench["group"],
                engine=info["engine"],
                per_call=info["per_call"],
                unit=info.get("unit", "calls"),
                preset=info.get("preset", ""),
                rounds=stats["rounds"],
                median=stats["median"],
                q1=stats["q1"],
                q3=stats["q3"],
            )
        )
    return found


def ratio(engine: Timing, peer: Timing) -> tuple[float, float, float]:
    """The engine's rate over the peer's at the medians, and at the quartiles (low, high)."""
    return (
        engine.rate(engine.median) / peer.rate(peer.median),
        engine.rate(engine.q3) / peer.rate(peer.q1),
        engine.rate(engine.q1) / peer.rate(peer.q3),
    )


def records(found: list[Timing]) -> dict[str, list[dict]]:
    """Each family's table rows: groups in the file's order, zoo's engines first in a group, each
    row's ratio against every peer of its group under `vs`."""
    groups: dict[str, list[Timing]] = {}
    for t in found:
        groups.setdefault(t.group, []).append(t)
    families: dict[str, list[dict]] = {}
    for group, members in groups.items():
        peers = [t for t in members if t.is_peer]
        for t in sorted(members, key=lambda t: t.is_peer):
            families.setdefault(t.family, []).append(
                {
                    "benchmark": group.split(maxsplit=1)[1],
                    "engine": t.engine,
                    "preset": t.preset,
                    "rounds": t.rounds,
                    "median_ms": 1e3 * t.median,
                    "iqr_ms": 1e3 * (t.q3 - t.q1),
                    "per_call": t.per_call,
                    "unit": t.unit,
                    "rate": t.rate(t.median),
                    "vs": {p.engine: ratio(t, p) for p in peers},
                }
            )
    return families


def ratio_cell(value: tuple[float, float, float]) -> str:
    median, low, high = value
    return f"{median:.2f}x ({low:.2f}-{high:.2f})"


def table(rows: list[dict]) -> list[str]:
    """The Markdown table of one family: a column per peer that appears in it."""
    peers = list(dict.fromkeys(peer for row in rows for peer in row["vs"]))
    cells = [{**row, "vs": {peer: ratio_cell(v) for peer, v in row["vs"].items()}} for row in rows]
    columns = [
        Column("benchmark", "benchmark"),
        Column("engine", "engine"),
        Column("preset", "preset"),
        Column("rounds", "rounds"),
        Column("median ms", "median_ms", "{:.2f}"),
        Column("IQR ms", "iqr_ms", "{:.2f}"),
        Column("per call", "per_call", "{:,}"),
        Column("unit", "unit"),
        Column("per second", "rate", RATE),
        *(Column(f"vs {peer} (quartiles)", f"vs.{peer}") for peer in peers),
    ]
    return markdown(cells, columns)


def provenance(data: dict, source: str) -> list[str]:
    """What the file records of its run: command, date, commit, machine, library versions."""
    machine, commit, bench = data.get("machine_info", {}), data.get("commit_info", {}), data.get("bench", {})
    cpu = machine.get("cpu", {})
    versions = ", ".join(f"{p} {machine[p]}" for p in PEER_PACKAGES if machine.get(p))
    dirty = " with uncommitted changes" if commit.get("dirty") else ""
    load = bench.get("load_average")
    return [
        f"`python -m bench.benchmark_report {source}`, from `{bench.get('command', '?')}` at "
        f"{data.get('datetime', '?')} (pytest-benchmark {data.get('version', '?')}); commit "
        f"{str(commit.get('id', '?'))[:12]} on {commit.get('branch', '?')}{dirty}.",
        f"Machine: {cpu.get('brand_raw') or machine.get('processor') or machine.get('machine', '?')}, "
        f"{cpu.get('count', '?')} CPUs, {machine.get('system', '?')} {machine.get('release', '')}, "
        f"Python {machine.get('python_version', '?')}; {versions or 'library versions not recorded'}; "
        f"{bench.get('threads', '?')} thread(s)"
        + (f", load average {load:.1f} at the end." if load is not None else "."),
    ]


EXPLAINED = (
    "Per second = units per call / the median call. vs PEER = the engine's rate over the peer's in "
    "the same benchmark (> 1: faster); in brackets from the engine's slow quartile against the "
    "peer's fast one to the converse. pytest-benchmark runs each engine's rounds back to back, not "
    "interleaved as `bench.timing.interleaved_medians` does: load from other processes can land on "
    "one engine only, so these figures want a quiet machine."
)


def page(family: str, rows: list[dict], data: dict, source: str) -> str:
    lines = [f"# {family}: zoo against its peers under pytest-benchmark", "", *provenance(data, source)]
    return "\n".join([*lines, "", EXPLAINED, "", *table(rows)]) + "\n"


def load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: not JSON ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise UserError(f"{path}: not a pytest-benchmark file (no 'benchmarks' list)")
    return data


@main_guard
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", type=Path, help="a pytest-benchmark JSON file")
    add_out_option(parser)
    args = parser.parse_args(argv)
    data = load(args.file)
    families = records(timings(data))
    if not families:
        raise UserError(f"{args.file}: no benchmark names its engine (extra_info.engine): nothing to compare")
    args.out.mkdir(parents=True, exist_ok=True)
    for family, rows in families.items():
        path = args.out / f"benchmark_{family}.md"
        path.write_text(page(family, rows, data, str(args.file)))
        print(f"{path}: {len(rows)} rows")


if __name__ == "__main__":
    main()
