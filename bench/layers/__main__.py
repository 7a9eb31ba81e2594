"""Measure the paper's Table 1 for every mixer in zoo.blocks.MIXERS.

    python -m bench.layers            # quick grid, under a minute on 2 busy CPU cores
    python -m bench.layers --full     # larger grid, about 4 minutes

Writes layers.md (the paper's table beside the measured one), layers.json (raw numbers),
and layers_*.png (log-log plots) into --out (runs/bench by default; bench/results to record them,
then `python -m bench.tables` updates docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import asdict, dataclass

import torch

from bench.layers import measure, report
from bench.output import add_out_option
from zoo.blocks.mixers import MIXERS, build_mixer


@dataclass(frozen=True)
class Grid:
    flop_lengths: list[int]
    flop_dims: list[int]
    sequential_lengths: list[int]
    path_lengths: list[int]
    time_lengths: list[int]
    time_dims: list[int]
    repeats: int
    kernel_size: int = 3
    batch: int = 1
    sequential_dim: int = 16
    path_dim: int = 4


GRIDS = {
    "quick": Grid(
        flop_lengths=[4, 8, 16, 32, 64, 128, 256, 512],
        flop_dims=[16, 32, 64, 128],
        sequential_lengths=[8, 16, 32, 64],
        path_lengths=[4, 8, 16, 32],
        time_lengths=[16, 32, 64, 128, 256, 512, 1024, 2048],
        time_dims=[64],
        repeats=5,
    ),
    "full": Grid(
        flop_lengths=[4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
        flop_dims=[16, 32, 64, 128, 256, 512],
        sequential_lengths=[8, 16, 32, 64, 128, 256],
        path_lengths=[4, 8, 16, 32, 64],
        time_lengths=[16, 32, 64, 128, 256, 512, 1024, 2048, 4096],
        time_dims=[64, 256],
        repeats=5,
    ),
}


class Progress:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    def __call__(self, message: str) -> None:
        print(f"[{time.perf_counter() - self.start:6.1f}s] {message}", flush=True)


def _input(grid: Grid, length: int, dim: int) -> torch.Tensor:
    return torch.randn(grid.batch, length, dim)


def measure_flops(grid: Grid, log: Progress) -> dict:
    """Counted forward FLOPs (causal layers) on the n x d grid, with the formula beside them."""
    out = {}
    for name in MIXERS:
        counted, analytic = [], []
        for dim in grid.flop_dims:
            mixer = build_mixer(name, dim, causal=True, kernel_size=grid.kernel_size)
            counted.append(
                [measure.count_flops(measure.traced(mixer), _input(grid, n, dim)) for n in grid.flop_lengths]
            )
            analytic.append(
                [
                    measure.analytic_flops(
                        name, batch=grid.batch, length=n, dim=dim, causal=True, kernel_size=grid.kernel_size
                    )
                    for n in grid.flop_lengths
                ]
            )
        out[name] = {"counted": counted, "analytic": analytic}
        log(f"flops       {name:15s} {len(grid.flop_dims) * len(grid.flop_lengths)} sizes")
    return out


def measure_sequential(grid: Grid, log: Progress) -> dict:
    out = {}
    for name in MIXERS:
        mixer = build_mixer(name, grid.sequential_dim, causal=True, kernel_size=grid.kernel_size)
        ops = [
            measure.sequential_ops(measure.traced(mixer), _input(grid, n, grid.sequential_dim))
            for n in grid.sequential_lengths
        ]
        out[name] = ops
        log(f"sequential  {name:15s} {ops}")
    return out


def measure_paths(grid: Grid, log: Progress) -> dict:
    out: dict = {"causal": {}, "non_causal": {}}
    for causal, key in ((True, "causal"), (False, "non_causal")):
        for name in MIXERS:
            kwargs = dict(causal=causal, kernel_size=grid.kernel_size)
            measured = [
                measure.path_length(name, length=n, dim=grid.path_dim, **kwargs) for n in grid.path_lengths
            ]
            formula = [measure.expected_path_length(name, length=n, **kwargs) for n in grid.path_lengths]
            out[key][name] = {"measured": measured, "formula": formula}
            log(f"path ({key:10s}) {name:15s} {measured}")
    return out


def measure_time_memory(grid: Grid, log: Progress) -> dict:
    out: dict = {}
    for dim in grid.time_dims:
        out[str(dim)] = {}
        for name in MIXERS:
            seconds, peak = [], []
            for n in grid.time_lengths:
                torch.manual_seed(0)
                mixer = build_mixer(name, dim, causal=True, kernel_size=grid.kernel_size)
                x = _input(grid, n, dim)
                seconds.append(measure.wall_time(mixer, x, repeats=grid.repeats))
                peak.append(measure.peak_memory(mixer, x))
            out[str(dim)][name] = {"seconds": seconds, "peak_bytes": peak}
            log(f"time d={dim:<4d} {name:15s} {seconds[-1] * 1e3:8.2f} ms at n={n}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.layers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the quick grid (the default)")
    mode.add_argument("--full", action="store_true", help="the larger grid (about 4 minutes)")
    add_out_option(parser)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads for the timings (1: steadier on a shared CPU)",
    )
    args = parser.parse_args(argv)
    name = "full" if args.full else "quick"
    grid = GRIDS[name]
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    log = Progress()
    log(f"{name} grid: {asdict(grid)}")
    results = {
        "config": {
            "mode": name,
            **asdict(grid),
            "threads": args.threads,
            "torch": torch.__version__,
            "machine": platform.processor() or platform.machine(),
            "causal": True,
        },
        "flops": measure_flops(grid, log),
        "sequential_ops": measure_sequential(grid, log),
        "path_length": measure_paths(grid, log),
        "time_memory": measure_time_memory(grid, log),
    }
    results["summary"] = report.summarize(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "layers.json").write_text(json.dumps(results, indent=1) + "\n")
    for path in report.plot(results, args.out):
        log(f"wrote {path}")
    (args.out / "layers.md").write_text(report.markdown(results))
    log(f"wrote {args.out / 'layers.md'}, layers.json and the plots")


if __name__ == "__main__":
    main()
