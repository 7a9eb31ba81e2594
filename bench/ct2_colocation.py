"""CTranslate2 beside torch in one process: the measurement behind bench.ct2_process.

    python -m bench.ct2_colocation [--threads 2] [--compute_type float32|int8] [--repeats 5]
        [--out bench/results]

GPT's mini preset (random weights) is converted for CTranslate2's Generator once; then, each in a
fresh process, CTranslate2 decodes one prompt of 64 ids for 128 new ids (greedy) with `--threads`
intra threads: alone; with torch imported; with torch imported and one parallel product run on
`--threads` threads first (what a bench process has done before it times CTranslate2); and
through bench.ct2_process.Remote from such a process. Writes ct2_colocation.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.output import add_out_option, publish
from bench.tables import RATE, Column, markdown
from bench.timing import cpu_model, run_meta

SETTINGS = {
    "alone": "CTranslate2 alone in its process",
    "torch_imported": "torch imported, idle",
    "torch_ran": "torch imported and one parallel product run",
    "remote": "torch ran; CTranslate2 in its own process (bench.ct2_process)",
}


def child(setting: str, folder: str, threads: int, repeats: int, compute_type: str) -> float:
    """Median tokens/s of CTranslate2's generation in this process, after `setting`'s torch."""
    if setting != "alone":
        import torch

        torch.set_num_threads(threads)
        if setting != "torch_imported":
            torch.randn(512, 512) @ torch.randn(512, 512)
    if setting == "remote":
        from bench.ct2_process import Remote

        generator = Remote(
            "Generator", folder, device="cpu", intra_threads=threads, compute_type=compute_type
        )
    else:
        import ctranslate2

        generator = ctranslate2.Generator(
            folder, device="cpu", intra_threads=threads, compute_type=compute_type
        )
    prompt = [[f"t{i % 997}" for i in range(64)]]
    kwargs = dict(max_length=128, min_length=128, sampling_topk=1, include_prompt_in_result=False)
    generator.generate_batch(prompt, **kwargs)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        generator.generate_batch(prompt, **kwargs)
        seconds.append(time.perf_counter() - start)
    return 128 / sorted(seconds)[len(seconds) // 2]


def write_model(folder: Path) -> None:
    from bench.gpt_speed import PRESETS, models
    from zoo.convert.ctranslate2 import write_ctranslate2_gpt

    vocab = PRESETS["mini"].vocab
    zoo, _ = models("mini", vocab, noise=0.3)
    write_ctranslate2_gpt(zoo, [f"t{i}" for i in range(vocab)], folder, eot_id=vocab - 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compute_type", choices=("float32", "int8"), default="float32")
    parser.add_argument("--child", nargs=2, metavar=("SETTING", "FOLDER"), help=argparse.SUPPRESS)
    add_out_option(parser)
    args = parser.parse_args()
    if args.child:
        print(child(*args.child, args.threads, args.repeats, args.compute_type))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        write_model(Path(tmp) / "ct2")
        for setting, what in SETTINGS.items():
            command = [sys.executable, "-m", "bench.ct2_colocation", "--threads", str(args.threads)]
            command += ["--repeats", str(args.repeats), "--compute_type", args.compute_type]
            command += ["--child", setting, str(Path(tmp) / "ct2")]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            rows.append({"setting": what, "tokens_per_s": float(out.split()[-1])})
    import ctranslate2

    setup = {"threads": args.threads, "repeats": args.repeats, "compute_type": args.compute_type}
    result = {
        **run_meta("bench.ct2_colocation", "ctranslate2", ctranslate2.__version__, setup),
        "cpu": cpu_model(),
        "load_average": os.getloadavg()[0],
        "rows": rows,
    }
    page = [
        "# CTranslate2 beside torch in one process\n",
        f"`{result['command']}` on {result['cpu']} ({result['hardware']}), torch {result['torch']}, "
        f"ctranslate2 {result['ctranslate2']}: GPT mini, batch 1, 64 + 128 ids, greedy, {args.compute_type}, "
        f"{args.threads} intra threads; medians of {args.repeats}; load average "
        f"{result['load_average']:.1f} at the end.\n",
        *markdown(rows, [Column("setting", "setting"), Column("CTranslate2 tokens/s", "tokens_per_s", RATE)]),
    ]
    publish(result, args.out, "ct2_colocation", page)


if __name__ == "__main__":
    main()
