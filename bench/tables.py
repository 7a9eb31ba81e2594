"""The result tables of the docs pages, generated from the JSON files in bench/results.

A page asks for a table with a pair of markers; everything between them is generated:

    <!-- table: translation_speed -->
    | ... |
    <!-- /table -->

`python -m bench.tables` rewrites every such table in docs/*.md from the JSON files;
`python -m bench.tables --check` rewrites nothing and exits 1 naming each page whose tables
differ from what the JSON files give (CI: the docs cannot drift from the measurements).

One rows function per JSON schema turns a file into flat records; one renderer turns records
into Markdown through a list of columns (header, key, format). A key is a dotted path looked up
in the record, then in the whole file (`setup.preset`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DOCS = ROOT / "docs"
MARKED = re.compile(r"(<!-- table: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.DOTALL)

Record = dict


def lookup(record: Record, key: str) -> object:
    """The value at a dotted key of the record, or of its file (`_file`) where the record lacks
    the key's first part."""
    value: object = record if key.split(".")[0] in record else record.get("_file", {})
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def cell(value: object, fmt: str) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return fmt.format(value)


@dataclass(frozen=True)
class Column:
    header: str
    key: str
    fmt: str = "{}"


def markdown(records: list[Record], columns: list[Column]) -> list[str]:
    lines = ["| " + " | ".join(c.header for c in columns) + " |", "|" + "---|" * len(columns)]
    for r in records:
        lines.append("| " + " | ".join(cell(lookup(r, c.key), c.fmt) for c in columns) + " |")
    return lines


# --- rows functions: one per JSON schema, each file -> flat records --------------------------


def listed(path: str = "rows") -> Callable[[dict, str], list[Record]]:
    """Files that hold their measurements as a list at a dotted path (the attention, ViT and BERT
    benches under `rows`; a training run's validation curve)."""

    def rows(data: dict, name: str) -> list[Record]:
        return _at(data, path)

    return rows


def whole(data: dict, name: str) -> list[Record]:
    """Files that are one measurement (runner overhead)."""
    return [data]


def nested(*levels: str) -> Callable[[dict, str], list[Record]]:
    """Files whose measurements sit in nested dicts, `at` the first level's path, one key per level
    (translation training: train.threads -> threads -> precision -> figures)."""
    at, names = levels[0], levels[1:]

    def rows(data: dict, name: str) -> list[Record]:
        def walk(node: dict, keys: dict, depth: int) -> Iterator[Record]:
            if depth == len(names):
                yield {**keys, **node}
                return
            for key, child in node.items():
                if isinstance(child, dict):
                    yield from walk(child, {**keys, names[depth]: key}, depth + 1)

        return list(walk(_at(data, at), {}, 0))

    return rows


def _at(data: dict, path: str) -> dict:
    for part in path.split("."):
        data = data[part]
    return data


def sections(data: dict, name: str) -> list[Record]:
    """GPU bench files: one `rows` list per model section (vit, bert, translation), each row a
    (mode, precision, library); zoo's rows get the ratio against the peer's row of the same step,
    compiled rows their speed-up over the same library's eager step."""
    records = []
    for section, part in data.items():
        if not (isinstance(part, dict) and "rows" in part):
            continue
        for row in part["rows"]:
            peer = next(
                (
                    p
                    for p in part["rows"]
                    if (p["mode"], p["precision"]) == (row["mode"], row["precision"])
                    and not p["library"].startswith("zoo")
                ),
                None,
            )
            ratio = peer["seconds"] / row["seconds"] if row["library"] == "zoo" and peer else None
            eager = next(
                (
                    p
                    for p in part["rows"]
                    if p["mode"] == "train"
                    and (p["precision"], p["library"]) == (row["precision"], row["library"])
                ),
                None,
            )
            speedup = eager["seconds"] / row["seconds"] if row["mode"] == "train+compile" and eager else None
            records.append(
                {**row, "model": section, "unit": part["unit"], "ratio": ratio, "compile_speedup": speedup}
            )
    return records


def evaluations(data: dict, name: str) -> list[Record]:
    """Parsing files, whatever their layout: every test-set evaluation they hold (a dict with a
    test F1: `split: test`, a key naming the test set, or `test_f1`), labelled by where it sits."""
    found = []

    def walk(node: object, path: list[str]) -> None:
        if isinstance(node, dict):
            on_test = node.get("split") == "test" or (
                node.get("split") is None and bool(path) and "test" in path[-1]
            )
            if "test_f1" in node or ("f1" in node and on_test):
                found.append(
                    {
                        "where": "/".join(path) or "(the file)",
                        "parser": node.get("parser") or run_name(node.get("checkpoint")),
                        "test_f1": node.get("test_f1", node.get("f1")),
                        **{k: node.get(k) for k in ("dev_f1", "exact", "tagging", "sentences_per_s")},
                        "device": node.get("device"),
                    }
                )
            for key, child in node.items():
                walk(child, [*path, str(key)])
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, [*path, str(i)])

    walk(data, [])
    return found


def run_name(checkpoint: str | None) -> str | None:
    """`runs/NAME/checkpoints/best.pt` -> `NAME best.pt`."""
    if not checkpoint:
        return None
    parts = Path(checkpoint).parts
    return f"{parts[1]} {parts[-1]}" if len(parts) >= 3 and parts[0] == "runs" else checkpoint


# --- the tables the pages ask for ---------------------------------------------------------------

RATIO = "{:.2f}x"
RATE = "{:,.0f}"
PCT = "{:.2f}"


@dataclass(frozen=True)
class Table:
    files: tuple[str, ...]  # globs under bench/results
    rows: Callable[[dict, str], list[Record]]
    columns: tuple[Column, ...]

    def records(self, data: dict, name: str) -> list[Record]:
        """The records of one file's `data`, each knowing its file (for keys such as `setup.preset`)
        and the file's `name`."""
        return [{**r, "_file": data, "file": name} for r in self.rows(data, name)]

    def render_file(self, data: dict, name: str) -> list[str]:
        """The table of one file, as the pages show its rows: what a bench writes beside its JSON."""
        return markdown(self.records(data, name), list(self.columns))

    def render(self, results: Path) -> list[str]:
        records = []
        for pattern in self.files:
            paths = sorted(results.glob(pattern))
            if not paths:
                raise FileNotFoundError(f"no {pattern} in {results}")
            for path in paths:
                records += self.records(json.loads(path.read_text()), path.name)
        return markdown(records, list(self.columns))


def benchmarked(*files: str, groups: tuple[str, ...]) -> Callable[[Path], list[str]]:
    """The rows of pytest-benchmark files (`pytest bench --benchmark-only --benchmark-json`) whose
    group starts with one of `groups` (`translation beam4`), rendered as `bench.benchmark_report`
    renders a family's page (its own renderer, so the two cannot differ); the group names the
    threads, which tell the files of one machine apart."""

    def render(results: Path) -> list[str]:
        from bench.benchmark_report import records, table, timings

        rows = []
        for name in files:
            data = json.loads((results / name).read_text())
            chosen = [t for t in timings(data) if t.group.startswith(groups)]
            if not chosen:
                raise LookupError(f"{name}: no benchmark group starts with {' or '.join(groups)}")
            for family in records(chosen).values():
                rows += family
        return table(rows)

    return render


def _layers(results: Path) -> list[str]:
    """Table 1 as `bench.layers` writes it (its own renderer, so the two cannot differ)."""
    from bench.layers.report import _compact_table  # imports torch: only when this table is asked

    return _compact_table(json.loads((results / "layers.json").read_text()))


CPU_BENCHMARKS = ("benchmark_zen4/cpu_t1.json", "benchmark_zen4/cpu_t2.json")
# GPT's greedy benches per preset, run apart (`--bench-preset gpt=PRESET`) once the compiled CPU
# step froze the weights, traced a batch's rows as a symbol (zoo.decode.lm_static) and attended
# over the static cache's written columns only (zoo.blocks.static_cache).
GPT_ROWS_BENCHMARKS = {
    preset: (f"benchmark_zen4_filled/gpt_{preset}_t1.json", f"benchmark_zen4_filled/gpt_{preset}_t2.json")
    for preset in ("micro", "mini", "gpt2_small")
}

# The tables the shims (python -m bench.vit_speed, ...) write beside their own JSON: their
# interleaved rounds, a cross-check of the pytest-benchmark figures on a shared machine.
SHIM_TABLES: dict[str, Table] = {
    "attention_speed": Table(
        ("attention_speed_cpu_*.json",),
        listed(),
        (
            Column("B", "B"),
            Column("T", "T"),
            Column("D", "D"),
            Column("H", "H"),
            Column("causal", "causal"),
            Column("dtype", "dtype"),
            Column("zoo ms", "zoo_ms", "{:.2f}"),
            Column("torch ms", "torch_ms", "{:.2f}"),
            Column("ratio", "ratio", RATIO),
            Column("hardware", "hardware"),
        ),
    ),
    "vit_speed": Table(
        ("vit_speed_zen5.json",),
        listed(),
        (
            Column("mode", "mode"),
            Column("precision", "precision"),
            Column("zoo images/s", "zoo_images_per_s", RATE),
            Column("timm images/s", "timm_images_per_s", RATE),
            Column("ratio (target >= 1.2x training)", "ratio", RATIO),
        ),
    ),
    "bert_speed": Table(
        ("bert_speed_tiny.json", "bert_speed_mini.json"),
        listed(),
        (
            Column("preset", "setup.preset"),
            Column("layers", "setup.num_hidden_layers"),
            Column("hidden", "setup.hidden_size"),
            Column("vocab", "setup.vocab_size"),
            Column("precision", "precision"),
            Column("zoo tokens/s", "zoo_tokens_per_s", RATE),
            Column("HF tokens/s", "hf_tokens_per_s", RATE),
            Column("ratio (target >= 1.2x)", "ratio", RATIO),
            Column("zoo, MLM head at every position", "zoo_every_position_tokens_per_s", RATE),
            Column("command", "command", "`{}`"),
        ),
    ),
}

TABLES: dict[str, Table | Callable[[Path], list[str]]] = {
    # The CPU peer comparisons: pytest-benchmark's JSON (bench/conftest.py), 1 and 2 threads.
    "translation_speed": benchmarked(*CPU_BENCHMARKS, groups=("translation beam4",)),
    "translation_train_speed": benchmarked(*CPU_BENCHMARKS, groups=("translation train",)),
    "attention_speed": benchmarked(*CPU_BENCHMARKS, groups=("attention",)),
    "vit_speed": benchmarked(*CPU_BENCHMARKS, groups=("vit train", "vit fwd+bwd", "vit infer")),
    "bert_speed": benchmarked(*CPU_BENCHMARKS, groups=("bert pretrain", "bert finetune", "bert encoder-ct2")),
    "gpt_speed": benchmarked(*CPU_BENCHMARKS, groups=("gpt train", "gpt prefill b", "gpt greedy")),
    **{
        f"gpt_speed_{preset}": benchmarked(*files, groups=("gpt greedy",))
        for preset, files in GPT_ROWS_BENCHMARKS.items()
    },
    "onnx_speed": benchmarked(
        *CPU_BENCHMARKS,
        groups=("translation greedy-onnx", "bert forward-onnx", "vit forward-onnx", "gpt prefill-onnx"),
    ),
    "runner_overhead": Table(
        ("runner_overhead.json",),
        whole,
        (
            Column("runner ms/step", "runner_ms_per_step", "{:.2f}"),
            Column("bare loop ms/step", "bare_ms_per_step", "{:.2f}"),
            Column("overhead", "overhead", "{:+.1%}"),
            Column("hardware", "hardware"),
            Column("command", "command", "`{}`"),
        ),
    ),
    "cpu_linear": Table(
        ("cpu_linear.json",),
        listed(),
        (
            Column("rows", "rows"),
            Column("in", "in"),
            Column("out", "out"),
            Column("pass", "pass"),
            Column("torch (MKL) GFLOPS", "torch_gflops", "{:.0f}"),
            Column("zoo (oneDNN) GFLOPS", "zoo_gflops", "{:.0f}"),
            Column("ratio", "ratio", RATIO),
        ),
    ),
    "gpu_training": Table(
        ("gpu_h100.json", "gpu_h100_translation.json"),
        sections,
        (
            Column("file", "file"),
            Column("model", "model"),
            Column("mode", "mode"),
            Column("precision", "precision"),
            Column("library", "library"),
            Column("items/s", "per_s", RATE),
            Column("unit", "unit"),
            Column("TFLOP/s", "tflops", "{:.0f}"),
            Column("MFU", "mfu", "{:.1%}"),
            Column("ratio zoo / peer", "ratio", RATIO),
        ),
    ),
    "gpu_realistic": Table(
        ("gpu_nvidia_h200_realistic.json", "gpu_nvidia_h200_realistic_fp32.json"),
        sections,
        (
            Column("model", "model"),
            Column("mode", "mode"),
            Column("precision", "precision"),
            Column("library", "library"),
            Column("items/s", "per_s", RATE),
            Column("unit", "unit"),
            Column("TFLOP/s", "tflops", "{:.0f}"),
            Column("MFU", "mfu", "{:.1%}"),
            Column("ratio zoo / peer", "ratio", RATIO),
            Column("compiled / eager", "compile_speedup", RATIO),
        ),
    ),
    "gpu_decode": Table(
        ("gpu_h100.json", "gpu_h100_decode.json"),
        nested("decode.precisions", "precision"),
        (
            Column("file", "file"),
            Column("precision", "precision"),
            Column("zoo tokens/s", "tokens_per_s.zoo", RATE),
            Column("generate tokens/s", "tokens_per_s.generate", RATE),
            Column("ratio", "ratio", RATIO),
        ),
    ),
    "gpu_gpt_decode": Table(
        ("gpu_nvidia_h200.json", "gpu_nvidia_h200_gpt_decode2.json"),
        nested("gpt_decode.batches", "batch"),
        (
            Column("file", "file"),
            Column("batch", "batch"),
            Column("zoo tokens/s", "tokens_per_s.zoo", RATE),
            Column("zoo static + compiled", "tokens_per_s.zoo_static_compiled", RATE),
            Column("HF generate", "tokens_per_s.hf", RATE),
            Column("HF static (compiled)", "tokens_per_s.hf_static", RATE),
            Column("static compiled / HF", "static_compiled_vs_hf", RATIO),
            Column("static compiled / HF static", "static_compiled_vs_hf_static", RATIO),
            Column("static compiled / zoo", "static_compiled_vs_zoo", RATIO),
        ),
    ),
    "translation_multi30k_curve": Table(
        ("translation_multi30k.json",),
        listed("valid_greedy"),
        (
            Column("step", "step"),
            Column("minutes since launch", "minutes", "{:.1f}"),
            Column("valid BLEU (greedy)", "bleu", PCT),
            Column("valid chrF", "chrf", PCT),
            Column("valid ppl", "ppl", PCT),
        ),
    ),
    "parsing_runs": Table(
        ("parsing_*.json",),
        evaluations,
        (
            Column("file", "file"),
            Column("where in it", "where"),
            Column("parser", "parser"),
            Column("device", "device"),
            Column("dev F1", "dev_f1", PCT),
            Column("test F1", "test_f1", PCT),
            Column("exact", "exact", PCT),
            Column("tagging", "tagging", PCT),
            Column("sentences/s", "sentences_per_s", "{:.1f}"),
        ),
    ),
    "layers": _layers,
}


def render(name: str, results: Path) -> str:
    if name not in TABLES:
        raise KeyError(f"unknown table {name!r}; known: {', '.join(TABLES)}")
    table = TABLES[name]
    lines = table.render(results) if isinstance(table, Table) else table(results)
    return "\n".join(lines) + "\n"


def regenerate(text: str, results: Path) -> str:
    """The page with every marked table generated afresh."""
    return MARKED.sub(lambda m: m.group(1) + render(m.group("name"), results) + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    parser.add_argument("--docs", type=Path, default=DOCS, help="folder of the pages (default: docs/)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the JSON files (bench/results/)")
    args = parser.parse_args(argv)
    stale = []
    for page in sorted(args.docs.glob("*.md")):
        text = page.read_text()
        fresh = regenerate(text, args.results)
        if fresh == text:
            continue
        stale.append(page)
        if not args.check:
            page.write_text(fresh)
    verb = "stale (run python -m bench.tables)" if args.check else "regenerated"
    for page in stale:
        print(f"{page}: {verb}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
