"""bench.gpu's bookkeeping, on the CPU: contender names of every bench parse the same way, and
the report puts each ratio on zoo's row against the peer of the same mode and precision."""

import pytest

from bench.gpu import markdown, split_name


@pytest.mark.parametrize("name, expected", [
    ("train/bf16/zoo", ("train", "bf16", "zoo")),                   # bench.vit_speed
    ("train+compile/bf16/timm", ("train+compile", "bf16", "timm")),
    ("fp32/zoo_every_position", ("train", "fp32", "zoo_every_position")),  # bench.bert_speed
    ("bf16/hf+compile", ("train+compile", "bf16", "hf")),
    ("marian/fp32", ("train", "fp32", "marian")),                   # bench.translation_speed
    ("zoo+compile/bf16", ("train+compile", "bf16", "zoo")),
])
def test_contender_names_of_every_bench(name, expected):
    assert split_name(name) == expected


def test_report_gives_zoo_over_its_peer_in_the_same_mode_and_precision():
    def row(mode, precision, library, seconds):
        return {"mode": mode, "precision": precision, "library": library, "seconds": seconds,
                "per_s": 100 / seconds, "tflops": 1.0, "mfu": 0.5}

    result = {"hardware": "test GPU", "command": "python -m bench.gpu", "torch": "x", "repeats": 3,
              "datasheet_peak": {"bf16": 1e15}, "measured_ceiling": {"bf16": 8e14},
              "bert": {"unit": "tokens", "setup": {}, "rows": [
                  row("train", "bf16", "zoo", 2.0), row("train", "bf16", "hf", 3.0),
                  row("train", "bf16", "zoo_every_position", 2.5),
                  row("train+compile", "bf16", "zoo", 4.0), row("train+compile", "bf16", "hf", 1.0)]}}
    lines = markdown(result).splitlines()
    assert "| train | bf16 | zoo | 50 | 1 | 50.0% | 1.50x |" in lines
    assert "| train+compile | bf16 | zoo | 25 | 1 | 50.0% | 0.25x |" in lines
    assert "| train | bf16 | zoo_every_position | 40 | 1 | 50.0% |  |" in lines
