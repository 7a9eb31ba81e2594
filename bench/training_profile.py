"""Where a training step of the translation model spends its time: torch.profiler's operator
table for the Multi30k recipe's model (3+3 layers, d 256, 8k vocabulary, dropout 0.3) on a
batch of its size (~3,800 target tokens), forward + label-smoothed loss + backward + Adam, as
the translation task runs it.

    python -m bench.training_profile [--threads 2] [--steps 5] [--unfused] [--out FILE]

`--unfused` computes the (N, V) logits and then the loss (zoo.blocks.cross_entropy), as before the
fused projection + loss of zoo.blocks.output_loss.

Prints seconds per step and the operators by self time; `--out` also writes them to FILE
(bench/results/training_profile*.txt keep the profiles behind the training figures).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from zoo.blocks.cross_entropy import label_smoothed_cross_entropy
from zoo.models import ModelConfig, build_model
from zoo.train.config import OptimConfig
from zoo.train.optim import build_optimizer

VOCAB, SOURCE_LEN, PAD = 8000, 14, 0
TOKENS = 3800


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5, help="profiled steps (after 3 warm-up and 10 timed)")
    parser.add_argument("--unfused", action="store_true", help="logits first, then the loss")
    parser.add_argument("--out", default="", help="also write the report to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = ModelConfig(
        encoder_layers=3, decoder_layers=3, dim=256, ffn_dim=1024, num_heads=4, dropout=0.3, max_len=256
    )
    model = build_model(cfg, VOCAB, VOCAB, PAD).train()
    optimizer = build_optimizer(model, OptimConfig(name="adam", lr=1e-4, betas=[0.9, 0.98]))  # the runner's
    batch = TOKENS // (SOURCE_LEN + 1)
    src = torch.randint(PAD + 4, VOCAB, (batch, SOURCE_LEN))
    tgt = torch.randint(PAD + 4, VOCAB, (batch, SOURCE_LEN + 2))

    def loss() -> torch.Tensor:
        if args.unfused:
            return label_smoothed_cross_entropy(
                model(src, tgt[:, :-1]), tgt[:, 1:], smoothing=0.1, ignore_index=PAD
            )[0]
        return model(src, tgt[:, :-1], tgt[:, 1:], smoothing=0.1).loss

    def step() -> None:
        loss().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    start = time.perf_counter()
    for _ in range(10):
        step()
    seconds = (time.perf_counter() - start) / 10
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step()
    path = "unfused" if args.unfused else "fused"
    report = (
        f"{seconds:.3f} s/step, {path} loss ({batch} x {SOURCE_LEN + 1} target tokens, "
        f"{args.threads} threads, "
        f"torch {torch.__version__})\n\n"
        + prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20, max_name_column_width=60)
    )
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n")


if __name__ == "__main__":
    main()
