"""zoo MultiHeadAttention vs torch.nn.MultiheadAttention, forward + backward, one run.

    python -m bench.attention_speed [--device cuda] [--dtype bf16]

Prints a table of the ratio torch_time / zoo_time (>= 1.0 means zoo is at least as fast) and
writes bench/results/attention_speed.{json,md}.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
from torch import nn

from bench.output import add_out_option, write_record
from bench.tables import SHIM_TABLES
from bench.timing import hardware, interleaved_medians
from zoo.blocks import MultiHeadAttention, causal_mask

SIZES = [(8, 64, 256, 4), (8, 128, 512, 8), (4, 512, 512, 8)]  # (B, T, D, H)


def contenders(
    b: int, t: int, d: int, h: int, causal: bool, device: str, dtype: torch.dtype
) -> dict[str, Callable[[], torch.Tensor]]:
    """zoo's and torch's forward + backward on one (B, T, D) input with H heads, each returning
    the attention output."""
    torch.manual_seed(0)
    ours = MultiHeadAttention(d, h).to(device, dtype)
    theirs = nn.MultiheadAttention(d, h, batch_first=True).to(device, dtype)
    x = torch.randn(b, t, d, device=device, dtype=dtype, requires_grad=True)
    torch_mask = ~causal_mask(t, device=device) if causal else None

    def zoo_step() -> torch.Tensor:
        out = ours(x, is_causal=causal)
        out.sum().backward()
        return out

    def torch_step() -> torch.Tensor:
        out, _ = theirs(x, x, x, attn_mask=torch_mask, is_causal=causal, need_weights=False)
        out.sum().backward()
        return out

    return {"zoo": zoo_step, "torch": torch_step}


def run(device: str, dtype: torch.dtype, repeats: int) -> list[dict]:
    rows = []
    for b, t, d, h in SIZES:
        for causal in (False, True):
            times = interleaved_medians(contenders(b, t, d, h, causal, device, dtype), repeats=repeats)
            rows.append(
                {
                    "B": b,
                    "T": t,
                    "D": d,
                    "H": h,
                    "causal": causal,
                    "zoo_ms": 1e3 * times["zoo"],
                    "torch_ms": 1e3 * times["torch"],
                    "ratio": times["torch"] / times["zoo"],
                }
            )
            print(
                f"B={b} T={t} D={d} H={h} causal={causal}: zoo {rows[-1]['zoo_ms']:.2f} ms, "
                f"torch {rows[-1]['torch_ms']:.2f} ms, ratio {rows[-1]['ratio']:.2f}x",
                flush=True,
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    add_out_option(parser)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = torch.float32 if args.dtype == "fp32" else torch.bfloat16
    rows = run(args.device, dtype, args.repeats)
    meta = {
        "hardware": hardware(),
        "torch": torch.__version__,
        "dtype": args.dtype,
        "command": f"python -m bench.attention_speed --device {args.device} --dtype {args.dtype} "
        f"--repeats {args.repeats} --threads {args.threads}",
    }
    tag = f"{args.device}_{args.dtype}"
    record = {**meta, "rows": rows}
    write_record(record, args.out, f"attention_speed_{tag}", "\n".join(page(record, tag)) + "\n")


def page(record: dict, tag: str) -> list[str]:
    """attention_speed_DEVICE_DTYPE.md: the run, then its table as the docs show it (bench.tables)."""
    return [
        f"# MultiHeadAttention forward+backward vs torch.nn.MultiheadAttention ({tag})",
        "",
        f"`{record['command']}` on {record['hardware']}, torch {record['torch']}. "
        "Ratio = torch time / zoo time (median of interleaved repeats).",
        "",
        *SHIM_TABLES["attention_speed"].render_file(record, f"attention_speed_{tag}.json"),
    ]


if __name__ == "__main__":
    main()
