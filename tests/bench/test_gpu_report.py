"""bench.gpu's report, on the CPU: each ratio on zoo's row against the peer of the same mode and
precision, each compiled step against the same library's eager one, and the decode benches'
tables as bench.tables renders them for the docs."""

import json
from pathlib import Path

from bench.gpu import markdown
from tests.bench.test_bench_tables_written import assert_has_table, docs_table

HEAD = {
    "hardware": "test GPU",
    "command": "python -m bench.gpu",
    "torch": "x",
    "repeats": 3,
    "datasheet_peak": {"bf16": 1e15},
    "measured_ceiling": {"bf16": 8e14},
}


def test_report_gives_zoo_over_its_peer_and_compiled_over_eager():
    def row(mode, precision, library, seconds):
        return {
            "mode": mode,
            "precision": precision,
            "library": library,
            "seconds": seconds,
            "per_s": 100 / seconds,
            "tflops": 1.0,
            "mfu": 0.5,
        }

    result = {
        **HEAD,
        "bert": {
            "unit": "tokens",
            "setup": {},
            "rows": [
                row("train", "bf16", "zoo", 2.0),
                row("train", "bf16", "hf", 3.0),
                row("train", "bf16", "zoo_every_position", 2.5),
                row("train+compile", "bf16", "zoo", 4.0),
                row("train+compile", "bf16", "hf", 1.0),
            ],
        },
    }
    lines = markdown(result, "gpu_test.json").splitlines()
    assert "| train | bf16 | zoo | 50 | 1 | 50.0% | 1.50x |  |" in lines
    assert "| train+compile | bf16 | zoo | 25 | 1 | 50.0% | 0.25x | 0.50x |" in lines
    assert "| train+compile | bf16 | hf | 100 | 1 | 50.0% |  | 3.00x |" in lines
    assert "| train | bf16 | zoo_every_position | 40 | 1 | 50.0% |  |  |" in lines


def test_gpu_decode_tables(tmp_path: Path) -> None:
    """The decode benches' tables are the docs' (bench.tables) for the JSON written beside them."""
    result = {
        **HEAD,
        "decode": {
            "setup": {"preset": "base", "batch": 64, "beam": 4},
            "precisions": {
                p: {
                    "tokens_per_s": {"zoo": 7170.7, "generate": 7062.5},
                    "mean_length": {"zoo": 81.0, "generate": 81.0},
                    "ratio": 1.0153,
                }
                for p in ("fp32", "bf16")
            },
        },
        "gpt_decode": {
            "setup": {"preset": "gpt2_small", "batches": [1, 8]},
            "first_call_s": {"1/zoo": 1.2},
            "batches": {
                b: {
                    "tokens_per_s": {
                        "zoo": 303.7,
                        "zoo_static_compiled": 1109.1,
                        "hf": 208.3,
                        "hf_static": 610.0,
                    },
                    "static_compiled_vs_hf": 5.32,
                    "static_compiled_vs_zoo": 3.65,
                    "static_compiled_vs_hf_static": 1.82,
                }
                for b in ("1", "8")
            },
        },
    }
    path = tmp_path / "gpu_nvidia_h100.json"
    path.write_text(json.dumps(result))
    report = markdown(result, path.name)
    decode = docs_table("gpu_decode", path, tmp_path)
    assert decode[2] == "| gpu_nvidia_h100.json | fp32 | 7,171 | 7,062 | 1.02x |"
    assert_has_table(report, decode)
    gpt = docs_table("gpu_gpt_decode", path, tmp_path)
    assert gpt[3] == "| gpu_nvidia_h100.json | 8 | 304 | 1,109 | 208 | 610 | 5.32x | 1.82x | 3.65x |"
    assert_has_table(report, gpt)
