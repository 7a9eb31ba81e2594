"""Dot-product against additive attention, and why the dot product is scaled (section 3.2.1).

    python -m bench.studies.scaling [--threads 1] [--out bench/results]

(a) For d_k from 8 to 512, with queries and keys of independent N(0, 1) entries: the variance of
    q.k (the paper: d_k), and what it does to a softmax over a row of 64 keys with and without
    1/sqrt(d_k): the mean largest weight, the mean entropy, and the norm of the gradient (for a
    random upstream gradient on the weights) that reaches the scores through the softmax, and that
    reaches the queries and keys through the scores, 1/sqrt(d_k) included where it is applied.
    Seeded; 64,000 scores per d_k; seconds.
(b) Time and peak memory of zoo's MultiHeadAttention with each score of
    zoo.blocks.attention_scores (scaled dot product, dot product, additive) at equal sizes,
    forward and backward, CPU fp32: the contenders timed in turns in one run (bench.timing), peak
    bytes from the ops' allocations (bench.layers.measure.peak_memory). Seconds too: (a) and (b)
    together 15 to 55 s on one thread of a 2-core CPU, the more the busier it is.
(c) The trained comparison at the Multi30k study budget runs as the `scores` rows of
    bench.studies.variations (`--rows scores`), not here.

Writes studies_scaling.{json,md} and studies_scaling_{softmax,cost}.png into --out (runs/bench
unless told; bench/results to record them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import torch
from torch import Tensor

from bench.layers.measure import forward_backward, peak_memory
from bench.output import add_out_option
from bench.studies.scaling_report import plot, write_markdown
from bench.timing import cpu_model, interleaved_medians
from zoo.blocks import SCORES, MultiHeadAttention

NAME = "studies_scaling"
D_KS = (8, 16, 32, 64, 128, 256, 512)
ROWS, KEYS = 1000, 64  # a query against 64 keys, 1,000 times: 64,000 scores per d_k
CHUNK = 100  # rows drawn (and differentiated) at a time
COST_SIZES = ((64, 16), (64, 64), (256, 16), (256, 64))  # (T, d_k); d_v = d_k, D = H d_k
BATCH, HEADS = 2, 4
SEED = 0


def unit_queries_keys(
    d_k: int, *, rows: int = ROWS, keys: int = KEYS, seed: int = SEED
) -> Iterator[tuple[Tensor, Tensor]]:
    """Queries (n, 1, d_k) and keys (n, keys, d_k), float64, every entry drawn independently from
    N(0, 1), `rows` queries in all, CHUNK at a time: the keys of d_k 512 stay ~26 MB a chunk."""
    generator = torch.Generator().manual_seed(seed)
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        q = torch.randn(n, 1, d_k, generator=generator, dtype=torch.float64)
        yield q, torch.randn(n, keys, d_k, generator=generator, dtype=torch.float64)


def unit_scores(d_k: int, *, rows: int = ROWS, keys: int = KEYS, seed: int = SEED) -> Tensor:
    """Unscaled scores q.k (rows, keys), float64: each row one query of unit_queries_keys against
    its `keys` keys."""
    chunks = unit_queries_keys(d_k, rows=rows, keys=keys, seed=seed)
    return torch.cat([(q @ k.transpose(1, 2))[:, 0] for q, k in chunks])


def saturation(scores: Tensor) -> dict[str, float]:
    """The softmax over each row: the mean largest weight (1/keys when uniform, 1 when one-hot)
    and the mean entropy in nats (log keys when uniform, 0 when one-hot)."""
    weights = scores.softmax(dim=-1)
    entropy = -torch.special.xlogy(weights, weights).sum(dim=-1)
    return {"max_weight": weights.max(dim=-1).values.mean().item(), "entropy": entropy.mean().item()}


def upstream_gradient(rows: int, keys: int, *, seed: int = SEED) -> Tensor:
    """g (rows, keys), float64 N(0, 1): the gradient of the loss g . softmax(scores) on the weights,
    the same for every d_k and for scaled and unscaled scores, so that only the softmax differs."""
    return torch.randn(rows, keys, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def score_gradients(scores: Tensor, *, seed: int = SEED) -> Tensor:
    """Per row, the norm of d loss / d scores through the softmax, for loss = g . softmax(scores)
    with g = upstream_gradient: what the scores get to learn from. The queries and keys get it
    through the scores, times 1/sqrt(d_k) where the scores are scaled (query_key_gradients)."""
    scores = scores.detach().requires_grad_()
    (scores.softmax(dim=-1) * upstream_gradient(*scores.shape, seed=seed)).sum().backward()
    return scores.grad.norm(dim=-1)


def attention_gradients(q: Tensor, k: Tensor, upstream: Tensor, *, scaled: bool) -> tuple[Tensor, Tensor]:
    """d loss / d q and d loss / d k, by autograd, for loss = upstream . softmax(q.k), q.k divided
    by sqrt(d_k) when `scaled`: q (n, 1, d_k) against k (n, keys, d_k), upstream (n, keys)."""
    q, k = q.detach().requires_grad_(), k.detach().requires_grad_()
    scores = (q @ k.transpose(1, 2))[:, 0]
    if scaled:
        scores = scores / math.sqrt(q.shape[-1])
    (scores.softmax(dim=-1) * upstream).sum().backward()
    return q.grad, k.grad


def query_key_gradients(
    d_k: int, *, scaled: bool, rows: int = ROWS, keys: int = KEYS, seed: int = SEED
) -> tuple[Tensor, Tensor]:
    """Per row, the norm of d loss / d q and of d loss / d k (the row's keys together), for the
    queries and keys of unit_queries_keys and the loss of score_gradients: what the queries and
    keys, and through them the projections W_Q and W_K, get to learn from."""
    upstream = upstream_gradient(rows, keys, seed=seed).split(CHUNK)
    chunks = unit_queries_keys(d_k, rows=rows, keys=keys, seed=seed)
    grads = [attention_gradients(q, k, g, scaled=scaled) for (q, k), g in zip(chunks, upstream, strict=True)]
    q_grads, k_grads = zip(*grads)
    return row_norms(q_grads), row_norms(k_grads)


def row_norms(chunks: tuple[Tensor, ...]) -> Tensor:
    """The norm of each row's gradient (all its entries together), over the chunks in order."""
    return torch.cat([grad.flatten(1).norm(dim=-1) for grad in chunks])


def spread(norms: Tensor, name: str) -> dict[str, float]:
    """The mean and the median of per-row gradient norms, as name_mean and name_median: both,
    because they part where a few rows take most of the gradient."""
    return {f"{name}_mean": norms.mean().item(), f"{name}_median": norms.median().item()}


def softmax_row(d_k: int) -> dict[str, Any]:
    """(a) at one d_k: variance, saturation and gradients (at the scores, the queries and the keys),
    unscaled and scaled."""
    raw = unit_scores(d_k)
    row: dict[str, Any] = {"d_k": d_k}
    for name, scaled in (("unscaled", False), ("scaled", True)):
        scores = raw / math.sqrt(d_k) if scaled else raw
        queries, keys = query_key_gradients(d_k, scaled=scaled)
        row[name] = {
            "variance": scores.var().item(),
            **saturation(scores),
            **spread(score_gradients(scores), "grad_norm"),
            **spread(queries, "query_grad_norm"),
            **spread(keys, "key_grad_norm"),
        }
    return row


def cost_row(length: int, d_k: int, *, repeats: int) -> dict[str, Any]:
    """(b) at one size: median seconds of a forward and backward per score (timed in turns) and
    the peak bytes the ops allocate, self-attention over (BATCH, length, HEADS d_k) inputs."""
    torch.manual_seed(SEED)
    x = torch.randn(BATCH, length, HEADS * d_k, requires_grad=True)
    modules = {score: MultiHeadAttention(HEADS * d_k, HEADS, score=score) for score in SCORES}
    steps = {score: partial(forward_backward, module, x) for score, module in modules.items()}
    seconds = interleaved_medians(steps, repeats=repeats)
    return {
        "T": length,
        "d_k": d_k,
        "seconds": seconds,
        "peak_bytes": {score: peak_memory(module, x) for score, module in modules.items()},
    }


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.studies.scaling",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1: steadier timings on a shared CPU)"
    )
    parser.add_argument("--repeats", type=int, default=15, help="timing rounds per size in (b)")
    add_out_option(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = arguments(argv)
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    softmax = []
    for d_k in D_KS:
        softmax.append(softmax_row(d_k))
        unscaled, scaled = softmax[-1]["unscaled"], softmax[-1]["scaled"]
        ratio = unscaled["query_grad_norm_median"] / scaled["query_grad_norm_median"]
        print(
            f"(a) d_k {d_k:4d}: var(q.k) {unscaled['variance']:8.1f}, median |dq| u/s {ratio:.2f}", flush=True
        )
    cost = []
    for length, d_k in COST_SIZES:
        cost.append(cost_row(length, d_k, repeats=args.repeats))
        ratio = cost[-1]["seconds"]["additive"] / cost[-1]["seconds"]["scaled_dot"]
        print(f"(b) T {length:4d} d_k {d_k:3d}: additive / scaled_dot time {ratio:5.1f}x", flush=True)
    record = {
        "command": " ".join(["python -m bench.studies.scaling", *(sys.argv[1:] if argv is None else argv)]),
        "hardware": f"{cpu_model()}, {os.cpu_count()} cores",
        "torch": torch.__version__,
        "load_average": round(os.getloadavg()[0], 2),  # at the start: the times in (b) move with other work
        "setup": {
            "rows": ROWS,
            "keys": KEYS,
            "seed": SEED,
            "batch": BATCH,
            "heads": HEADS,
            "threads": args.threads,
            "repeats": args.repeats,
        },
        "softmax": softmax,
        "cost": cost,
        "seconds": round(time.perf_counter() - start, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{NAME}.json").write_text(json.dumps(record, indent=1) + "\n")
    for path in [*plot(record, args.out, NAME), write_markdown(record, args.out, NAME)]:
        print(f"wrote {path}")
    return record


if __name__ == "__main__":
    main()
