"""Attention over few keys on the CPU in float32: the measurements behind zoo.blocks.softmax and
`FLOAT32_CPU_MAX_KEYS` (zoo.blocks.attention).

    python -m bench.short_attention [--threads 1] [--out bench/results]

writes OUT/attention_short_keys_cpu_tTHREADS.{json,md} (OUT: runs/bench unless told).

Three tables, each the median of interleaved calls in one process:
1. softmax over the last dimension, forward + backward, ns an element: torch's, and padded to
   zoo.blocks.softmax.VECTOR (`softmax_last`), by row width;
2. attention forward + backward on raw (B, H, T, 64) tensors: torch's fused kernel against the
   written-out path (`attention_reference`, its softmax padded);
3. the Multi30k recipe's model (3+3 layers, d 256), a whole training step (forward, fused loss,
   backward, Adam) on batches of Multi30k's size at several sentence lengths, with the
   written-out path up to 64 keys against the fused kernel everywhere: inside the model the
   written-out products copy q, k and v (views of the fused projection), which the kernel reads
   in place, so the raw gain of table 2 shrinks there (why FLOAT32_CPU_MAX_KEYS is 16).
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

import zoo.blocks.attention as attention
from bench.output import add_out_option, publish
from bench.timing import cpu, cpu_model, interleaved_medians
from zoo.blocks.softmax import softmax_last
from zoo.models import ModelConfig, build_model
from zoo.train.config import OptimConfig
from zoo.train.optim import build_optimizer

WIDTHS = [2, 3, 4, 8, 14, 15, 16, 20, 32]
SHAPES = [  # B, H, T, S, causal: Multi30k's self-, causal and cross-attention, then longer
    (253, 4, 14, 14, False),
    (253, 4, 15, 15, True),
    (253, 4, 15, 14, False),
    (128, 4, 31, 30, False),
    (32, 4, 64, 64, False),
    (16, 4, 128, 128, False),
]
SOURCE_LENGTHS = (10, 14, 20, 30)  # Multi30k's sentences run 10-15 pieces; the translation bench's 30


def softmax_rows(repeats: int) -> list[dict]:
    """ns an element, forward and backward, of torch's softmax and the padded one, by width."""
    rows, elements = [], 1 << 20
    for width in WIDTHS:
        x = torch.randn(elements // width, width, requires_grad=True)
        fns = {"torch": _backward(_torch_softmax, x), "padded": _backward(softmax_last, x)}
        seconds = interleaved_medians(fns, repeats=repeats)
        rows.append({"width": width, **{f"{k}_ns": v * 1e9 / elements for k, v in seconds.items()}})
    return rows


def _torch_softmax(x: torch.Tensor) -> torch.Tensor:
    return x.softmax(dim=-1)


def _backward(softmax, x: torch.Tensor):
    grad = torch.randn_like(x)
    return lambda: softmax(x).backward(grad)


def attention_rows(repeats: int) -> list[dict]:
    """ms of the fused kernel and the written-out path, forward and backward, on raw tensors."""
    rows = []
    for b, h, t, s, causal in SHAPES:
        qkv = [torch.randn(b, h, n, 64, requires_grad=True) for n in (t, s, s)]
        mask = None if causal else torch.rand(b, 1, 1, s) > 0.1
        fns = {name: _attention(fn, qkv, mask, causal) for name, fn in PATHS.items()}
        seconds = interleaved_medians(fns, repeats=repeats)
        rows.append(
            {"shape": [b, h, t, s], "causal": causal, **{f"{k}_ms": v * 1e3 for k, v in seconds.items()}}
        )
    return rows


def _fused(q, k, v, mask, causal):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)


def _written(q, k, v, mask, causal):
    return attention.attention_reference(q, k, v, mask, causal)[0]


PATHS = {"fused": _fused, "written": _written}


def _attention(fn, qkv: list[torch.Tensor], mask, causal: bool):
    grad = torch.randn_like(qkv[0])
    return lambda: fn(*qkv, mask, causal).backward(grad)


def training_rows(repeats: int) -> list[dict]:
    """The whole step with attention written out up to 64 keys against the kernel everywhere,
    at several sentence lengths (batches of ~3,800 target tokens): where the limit pays."""
    torch.manual_seed(0)
    cfg = ModelConfig(
        encoder_layers=3, decoder_layers=3, dim=256, ffn_dim=1024, num_heads=4, dropout=0.3, max_len=256
    )
    model = build_model(cfg, 8000, 8000, 0).train()
    optimizer = build_optimizer(model, OptimConfig(name="adam", lr=1e-4, betas=[0.9, 0.98]))
    rows, kept = [], attention.FLOAT32_CPU_MAX_KEYS
    try:
        for length in SOURCE_LENGTHS:
            batch = 3800 // (length + 1)
            src, tgt = torch.randint(4, 8000, (batch, length)), torch.randint(4, 8000, (batch, length + 2))
            steps = {
                "fused": _step(model, optimizer, src, tgt, 0),
                "written": _step(model, optimizer, src, tgt, 64),
            }
            seconds = interleaved_medians(steps, repeats=repeats)
            rows.append(
                {"source_length": length, "sentences": batch, **{f"{k}_s": v for k, v in seconds.items()}}
            )
    finally:
        attention.FLOAT32_CPU_MAX_KEYS = kept
    return rows


def _step(model, optimizer, src: torch.Tensor, tgt: torch.Tensor, max_keys: int):
    def run() -> None:
        attention.FLOAT32_CPU_MAX_KEYS = max_keys
        model(src, tgt[:, :-1], tgt[:, 1:], smoothing=0.1).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return run


def page(record: dict) -> list[str]:
    lines = [
        f"`{record['command']}`: {record['cpu']}, {record['threads']} thread(s), torch {record['torch']}",
        "",
    ]
    lines += ["| width | torch ns/element | padded ns/element |", "|---|---|---|"]
    lines += [f"| {r['width']} | {r['torch_ns']:.2f} | {r['padded_ns']:.2f} |" for r in record["softmax"]]
    lines += ["", "| B, H, T, S | causal | fused kernel ms | written out ms |", "|---|---|---|---|"]
    lines += [
        f"| {', '.join(map(str, r['shape']))} | {'yes' if r['causal'] else 'no'} | {r['fused_ms']:.2f} | "
        f"{r['written_ms']:.2f} |"
        for r in record["attention"]
    ]
    lines += [
        "",
        "| source length | sentences | kernel everywhere s | written out up to 64 keys s | ratio |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['source_length']} | {r['sentences']} | {r['fused_s']:.3f} | {r['written_s']:.3f} | "
        f"{r['fused_s'] / r['written_s']:.3f}x |"
        for r in record["training"]
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=15)
    add_out_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    record = {
        "command": "python -m bench.short_attention " + " ".join(sys.argv[1:]),
        "cpu": cpu_model(),
        "lscpu": cpu(),
        "threads": args.threads,
        "torch": torch.__version__,
        "softmax": softmax_rows(args.repeats),
        "attention": attention_rows(args.repeats),
        "training": training_rows(max(3, args.repeats // 3)),
    }
    publish(record, args.out, f"attention_short_keys_cpu_t{args.threads}", page(record))


if __name__ == "__main__":
    main()
