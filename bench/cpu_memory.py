"""zoo.cpu_memory's malloc settings on and off: what they buy zoo and its peers.

    python -m bench.cpu_memory [--rounds 2] [--repeats 7] [--threads 1] [--out bench/results]

Each round runs every setting in a fresh process (the settings act on a process's allocations
from the start): `system` (ZOO_MALLOC=system, glibc's defaults) and `kept` (fewer_page_faults()).
In each, medians of `--repeats` interleaved rounds after one warmup
(bench.timing.interleaved_medians): a BERT encoder of all-MiniLM-L6-v2's size
on 32 x 128 ids in float32 and int8 (bench.int8_speed's), a BERT-Tiny pretraining step, zoo and
Hugging Face (bench.bert_speed's), and a translation training step of the small preset, zoo and
Marian (bench.translation_speed's). Writes cpu_memory.{json,md}; ratios are system / kept times
(> 1: the settings help).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys

from bench.output import add_out_option, publish
from bench.tables import RATIO, Column, markdown
from bench.timing import cpu_model, interleaved_medians, run_meta

SETTINGS = ("system", "kept")
WORKLOADS = (
    "bert encoder fp32 (zoo)",
    "bert encoder int8 (zoo)",
    "bert-tiny pretraining step (zoo)",
    "bert-tiny pretraining step (hf)",
    "translation training step (zoo)",
    "translation training step (marian)",
)


def child(repeats: int, threads: int) -> dict[str, float]:
    """Milliseconds per call of each workload, in this process (its malloc set by bench's import)."""
    import torch

    from bench import bert_speed, translation_speed
    from bench.int8_speed import BATCH, LENGTH, MINILM
    from zoo.models.bert import Bert
    from zoo.quantize import quantize_int8

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    encoder = Bert(**MINILM).eval()
    int8 = quantize_int8(copy.deepcopy(encoder))
    ids = torch.randint(
        1000, MINILM["vocab_size"], (BATCH, LENGTH), generator=torch.Generator().manual_seed(0)
    )
    pretraining, _ = bert_speed.contenders("tiny", torch.device("cpu"))
    training, _ = translation_speed.training_contenders(translation_speed.PRESETS["small"])
    fns = dict(
        zip(
            WORKLOADS,
            (
                torch.no_grad()(lambda: encoder.encode(ids)),
                torch.no_grad()(lambda: int8.encode(ids)),
                pretraining["train/fp32/zoo"],
                pretraining["train/fp32/hf"],
                training["train/fp32/zoo"],
                training["train/fp32/marian"],
            ),
            strict=True,
        )
    )
    return {name: 1e3 * seconds for name, seconds in interleaved_medians(fns, repeats=repeats).items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per setting")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per workload in a process")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    add_out_option(parser)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.repeats, args.threads)))
        return
    runs: dict[str, list[dict[str, float]]] = {setting: [] for setting in SETTINGS}
    for _ in range(args.rounds):
        for setting in SETTINGS:
            env = {key: value for key, value in os.environ.items() if key != "ZOO_MALLOC"}
            env |= {"ZOO_MALLOC": "system"} if setting == "system" else {}
            command = [sys.executable, "-m", "bench.cpu_memory", "--child", "--repeats", str(args.repeats)]
            command += ["--threads", str(args.threads)]
            out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
            runs[setting].append(json.loads(out.splitlines()[-1]))
    rows = [
        {
            "workload": name,
            "round": i + 1,
            "system_ms": runs["system"][i][name],
            "kept_ms": runs["kept"][i][name],
            "ratio": runs["system"][i][name] / runs["kept"][i][name],
        }
        for name in WORKLOADS
        for i in range(args.rounds)
    ]
    setup = {"rounds": args.rounds, "repeats": args.repeats, "threads": args.threads}
    result = {
        **run_meta("bench.cpu_memory", "glibc", os.confstr("CS_GNU_LIBC_VERSION"), setup),
        "cpu": cpu_model(),
    }
    result["rows"] = rows
    columns = [
        Column("workload", "workload"),
        Column("round", "round"),
        Column("system malloc ms", "system_ms", "{:.0f}"),
        Column("kept (fewer_page_faults) ms", "kept_ms", "{:.0f}"),
        Column("system / kept", "ratio", RATIO),
    ]
    page = [
        "# zoo.cpu_memory: glibc's malloc keeping freed memory, on and off\n",
        f"`{result['command']}` on {result['cpu']}, torch {result['torch']}, {result['glibc']}; "
        f"each setting in a fresh process per round, medians of {args.repeats} interleaved rounds.\n",
        *markdown(rows, columns),
    ]
    publish(result, args.out, "cpu_memory", page)


if __name__ == "__main__":
    main()
