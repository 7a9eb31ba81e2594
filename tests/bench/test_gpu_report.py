"""bench.gpu's report, on the CPU: each ratio on zoo's row against the peer of the same mode and
precision, and each compiled step against the same library's eager one."""

from bench.gpu import markdown


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
        "hardware": "test GPU",
        "command": "python -m bench.gpu",
        "torch": "x",
        "repeats": 3,
        "datasheet_peak": {"bf16": 1e15},
        "measured_ceiling": {"bf16": 8e14},
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
    lines = markdown(result).splitlines()
    assert "| train | bf16 | zoo | 50 | 1 | 50.0% | 1.50x |  |" in lines
    assert "| train+compile | bf16 | zoo | 25 | 1 | 50.0% | 0.25x | 0.50x |" in lines
    assert "| train+compile | bf16 | hf | 100 | 1 | 50.0% |  | 3.00x |" in lines
    assert "| train | bf16 | zoo_every_position | 40 | 1 | 50.0% |  |  |" in lines
