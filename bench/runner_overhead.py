"""The runner's cost per step against a bare hand-written PyTorch loop, same model and data.

    python -m bench.runner_overhead [--steps 60] [--repeats 5]

Both train the reverse demo's encoder-decoder on the same batches with the same task step
(model forward and loss) and Adam; the difference is the runner's own machinery. The per-step time
of each is the slope between a short and a long run, (T(long) - T(short)) / (steps difference),
which cancels set-up, the final evaluation and the checkpoint. Target: overhead <= 2%.
Writes bench/results/runner_overhead.{json,md}.
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import torch

from bench.output import add_out_option, write_record
from bench.tables import TABLES
from bench.timing import hardware
from tasks.reverse.config import ReverseConfig
from tasks.reverse.task import ReverseTask
from zoo.train import RunContext, fit, move_to
from zoo.train.optim import build_optimizer


def bare_loop(cfg: ReverseConfig, steps: int) -> None:
    """What a user would write by hand around the same task step: no logging, checkpoints,
    schedule, metric reduction or NaN check."""
    task = ReverseTask(cfg)
    task.setup(
        RunContext(
            rank=0,
            world_size=1,
            local_rank=0,
            device=torch.device("cpu"),
            run_dir=Path("."),
            seed=cfg.train.seed,
        )
    )
    torch.manual_seed(cfg.train.seed)
    model = task.build_model()
    optimizer = build_optimizer(model, cfg.optim)  # the runner's own: the loops differ in nothing else
    batches = task.train_batches(0)
    for _ in range(steps):
        batch = move_to(next(batches), torch.device("cpu"))
        loss = task.train_step(model, batch)["loss"].loss
        (loss / task.units(batch)["loss"]).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def runner_loop(cfg: ReverseConfig, steps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = copy.deepcopy(cfg)
        run.train.out_dir, run.train.max_steps = tmp, steps
        fit(run, ReverseTask(run))


def timed(fn, cfg: ReverseConfig, steps: int) -> float:
    start = time.perf_counter()
    fn(cfg, steps)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    add_out_option(parser)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = ReverseConfig()
    cfg.data.batches_per_epoch = 10 * args.steps
    cfg.data.valid_size = 64
    cfg.train.progress, cfg.train.tensorboard = False, False
    cfg.train.log_every, cfg.train.eval_every, cfg.train.save_every = 10, 0, 0
    short, long = args.steps // 6, args.steps
    slopes: dict[str, list[float]] = {"runner": [], "bare": []}
    for _ in range(args.repeats):
        for name, fn in (("runner", runner_loop), ("bare", bare_loop)):
            slopes[name].append((timed(fn, cfg, long) - timed(fn, cfg, short)) / (long - short))
    median = {name: sorted(v)[len(v) // 2] for name, v in slopes.items()}
    overhead = median["runner"] / median["bare"] - 1
    result = {
        "hardware": hardware(),
        "torch": torch.__version__,
        "command": f"python -m bench.runner_overhead --steps {args.steps} --repeats {args.repeats} "
        f"--threads {args.threads}",
        "runner_ms_per_step": 1e3 * median["runner"],
        "bare_ms_per_step": 1e3 * median["bare"],
        "overhead": overhead,
        "samples_ms": {k: [1e3 * x for x in v] for k, v in slopes.items()},
    }
    print(
        f"runner {result['runner_ms_per_step']:.2f} ms/step, bare loop "
        f"{result['bare_ms_per_step']:.2f} ms/step: overhead {100 * overhead:+.1f}% (target <= 2%)"
    )
    write_record(result, args.out, "runner_overhead", "\n".join(page(result)) + "\n")


def page(result: dict) -> list[str]:
    """runner_overhead.md: the run, then its table as the docs show it (bench.tables)."""
    return [
        "# Runner overhead vs a bare PyTorch loop",
        "",
        f"`{result['command']}` on {result['hardware']}, torch {result['torch']}.",
        "",
        *TABLES["runner_overhead"].render_file(result, "runner_overhead.json"),
    ]


if __name__ == "__main__":
    main()
