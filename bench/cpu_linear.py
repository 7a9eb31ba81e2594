"""float32 CPU linears: torch's own (`F.linear`, the BLAS torch was built with) against
zoo.blocks.linear on oneDNN, in one run, the two taking turns (bench/timing.py).

    python -m bench.cpu_linear [--threads 1] [--repeats 7] [--out bench/results]

Shapes are the zoo's: a beam-search step of the Multi30k model (128 rows = 32 sentences x 4
beams; D = 256, FFN 1024, vocabulary 8,000), a training batch of ~4,000 tokens, GPT-2 small's
width. Forward alone, and forward + both gradients. Writes cpu_linear.{json,md}.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.nn.functional as F

from bench.output import add_out_option, publish
from bench.tables import TABLES, markdown
from bench.timing import cpu_model, interleaved_medians
from zoo.blocks import linear as zoo_linear

SHAPES = [  # rows, in, out
    (128, 256, 1024),
    (128, 1024, 256),
    (128, 256, 8000),
    (4096, 256, 1024),
    (4096, 1024, 256),
    (1024, 768, 3072),
]


def contenders(rows: int, n_in: int, n_out: int, backward: bool) -> dict:
    torch.manual_seed(0)
    x = torch.randn(rows, n_in, requires_grad=backward)
    weight = torch.randn(n_out, n_in, requires_grad=backward)
    bias = torch.randn(n_out, requires_grad=backward)
    grad = torch.randn(rows, n_out)

    def run(fn):
        def step() -> None:
            out = fn(x, weight, bias)
            if backward:
                torch.autograd.grad(out, (x, weight, bias), grad)

        return step

    return {"torch": run(F.linear), "zoo": run(zoo_linear.linear)}


def measure(repeats: int) -> list[dict]:
    rows = []
    for shape in SHAPES:
        for backward in (False, True):
            seconds = interleaved_medians(contenders(*shape, backward), repeats=repeats, warmup=2)
            flops = 2 * shape[0] * shape[1] * shape[2] * (3 if backward else 1)
            rows.append(
                {
                    **dict(zip(("rows", "in", "out"), shape)),
                    "pass": "forward + backward" if backward else "forward",
                    "torch_gflops": flops / seconds["torch"] / 1e9,
                    "zoo_gflops": flops / seconds["zoo"] / 1e9,
                    "ratio": seconds["torch"] / seconds["zoo"],
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    add_out_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if zoo_linear.backend() != "onednn":
        raise SystemExit(f"zoo.blocks.linear takes {zoo_linear.backend()!r} here: set ZOO_CPU_LINEAR=onednn")
    result = {
        "command": f"python -m bench.cpu_linear --threads {args.threads} --repeats {args.repeats}",
        "cpu": cpu_model(),
        "threads": args.threads,
        "torch": torch.__version__,
        "blas": next(line.strip() for line in torch.__config__.show().splitlines() if "Math Kernel" in line),
        "load_average": os.getloadavg()[0],
        "rows": measure(args.repeats),
    }
    page = [
        "# float32 CPU linears: torch's BLAS against zoo.blocks.linear (oneDNN)\n",
        f"`{result['command']}` on {result['cpu']}, {args.threads} thread(s), torch {result['torch']}"
        f" ({result['blas']}); load average {result['load_average']:.1f} at the start; medians of"
        f" {args.repeats} interleaved rounds.\n",
        *markdown(result["rows"], list(TABLES["cpu_linear"].columns)),
    ]
    publish(result, args.out, "cpu_linear", page)


if __name__ == "__main__":
    main()
