"""The GPU paths measured: zoo against its peers on one CUDA device, with model FLOPs utilisation.

    python -m bench.gpu [--only vit,bert,bert512,translation,decode] [--repeats 10] [--compile]
        [--no-compile-peers] [--sizes recipe|realistic] [--precisions fp32,bf16] [--profile]
        [--sdpa cudnn|flash|efficient|math]

The training benches of the CPU (bench.vit_speed, bench.bert_speed, bench.translation_speed
--train) at GPU-sized presets: ViT-B/16 at 224 px against timm, BERT-base at 128 and 512 tokens
against Hugging Face's BertForPreTraining, the paper's base Transformer (6+6 layers, d 512,
37,000 pieces) against Marian, in fp32 and under bf16 autocast, each precision its own
interleaved round robin. `--sizes recipe` (default) takes the CPU recipes' batches (ViT 128
images, BERT 32 x 128 or 8 x 512 tokens, the Transformer ~3,900 target tokens); `--sizes
realistic` the papers' (256 images, 256 x 128 or 64 x 512 tokens, ~25,000 target tokens).
`--compile` adds the models under torch.compile (inductor) in bf16 (zoo's alone with
`--no-compile-peers`). Beam search (4) of the base Transformer with random weights, forced to
full length, against `generate` in fp32 and bf16.

MFU (model FLOPs utilisation) = the FLOPs a step does, counted by torch's FlopCounterMode on
the eager step (matrix products and attention, forward and backward; each contender's own
count, so zoo's MLM head at masked positions only does fewer FLOPs than Hugging Face's) over
its median time and the device's dense peak: the datasheet's (H100/H200 SXM: 989 TFLOP/s
bf16, 67 TFLOP/s fp32 without TF32) beside the ceiling measured here (an 8192^3 product).
Writes bench/results/gpu_<device>[_realistic].{json,md} (after each bench, so a time limit keeps
what was measured); `--profile` adds torch.profiler tables of each bench's bf16 steps
(gpu_[realistic_]<bench>_profile.txt). `--sdpa` confines every contender's attention (eager and
compiled, peers too) to one of torch's SDPA kernels, written as a suffix of the files' names.
The figures of the one GPU session so far, and what they mean: bench/results/gpu.md.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from bench.output import add_out_option
from bench.tables import TABLES
from bench.timing import interleaved_medians, run_meta

PRECISIONS = ("fp32", "bf16")
SDPA = {
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
}
# Dense (no sparsity) datasheet peaks, FLOP/s; fp32 is the non-tensor-core rate that torch's
# default matmul precision ("highest", no TF32) runs at.
DATASHEET = {"H100": {"bf16": 989.4e12, "fp32": 66.9e12}, "H200": {"bf16": 989.4e12, "fp32": 66.9e12}}


def datasheet_peak() -> dict[str, float] | None:
    name = torch.cuda.get_device_name()
    return next((peaks for chip, peaks in DATASHEET.items() if chip in name), None)


def measured_ceiling(size: int = 8192, repeats: int = 10) -> dict[str, float]:
    """FLOP/s of a size^3 matrix product on random data, per precision (median of `repeats`)."""
    out = {}
    for precision, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        a, b = (torch.randn(size, size, device="cuda", dtype=dtype) for _ in range(2))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for i in range(repeats + 3):
            start.record()
            a @ b
            end.record()
            torch.cuda.synchronize()
            if i >= 3:
                times.append(start.elapsed_time(end) / 1e3)
        out[precision] = 2 * size**3 / sorted(times)[len(times) // 2]
    return out


def step_flops(fn: Callable[[], None]) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


# Items per training step. "recipe": the batches of the CPU recipes, where a GPU waits on the
# host; "realistic": the papers' steps (the Transformer's ~25,000 target tokens, BERT's 256 x 128
# and 64 x 512 tokens, ViT's 256 images per device).
SIZES = {
    "recipe": {"vit": 128, "bert": 32, "bert512": 8, "translation": 128},
    "realistic": {"vit": 256, "bert": 256, "bert512": 64, "translation": 800},
}


def contenders(
    what: str,
    device: torch.device,
    compiled: bool,
    *,
    sizes: str = "recipe",
    compile_peer: bool = True,
    precisions: tuple[str, ...] = PRECISIONS,
) -> tuple[dict[str, Callable], int, str, dict]:
    """The bench's callables, named MODE/PRECISION/LIBRARY, the items one call processes, their
    unit and the setup."""
    batch = SIZES[sizes][what]
    options = dict(compile_peer=compile_peer, precisions=precisions)
    if what == "vit":
        from bench import vit_speed

        fns, setup = vit_speed.contenders("vit_base", device, compiled, batch=batch, **options)
        return {k: f for k, f in fns.items() if not k.startswith("fwd+bwd/")}, setup["batch"], "images", setup
    if what in ("bert", "bert512"):
        from bench import bert_speed

        length = 512 if what == "bert512" else 128
        fns, setup = bert_speed.contenders("base", device, compiled, batch=batch, length=length, **options)
        return fns, setup["tokens"], "tokens", setup
    from bench import translation_speed

    preset = dataclasses.replace(translation_speed.PRESETS["base"], train_batch=batch)
    fns, tokens = translation_speed.training_contenders(preset, device, compiled, **options)
    return fns, tokens, "target tokens", {"preset": "base", **vars(preset)}


def write_profile(fns: dict[str, Callable], calls: int, command: str, path: Path) -> None:
    """torch.profiler key averages (CPU and CUDA) of `calls` calls of each callable, after two
    untimed ones: what a ratio comes from."""
    from torch.profiler import ProfilerActivity, profile

    tables = []
    for name, fn in fns.items():
        fn(), fn()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
        tables.append(
            f"# {name}, {calls} call(s)\n"
            + prof.key_averages().table(sort_by="cuda_time_total", row_limit=20, max_name_column_width=50)
        )
    path.write_text(
        f"# `{command}`, {torch.cuda.get_device_name()}, torch {torch.__version__}\n\n"
        + "\n\n".join(tables)
        + "\n"
    )


def training_rows(
    what: str,
    device: torch.device,
    repeats: int,
    compiled: bool,
    peaks: dict[str, float] | None,
    *,
    sizes: str = "recipe",
    compile_peer: bool = True,
    precisions: tuple[str, ...] = PRECISIONS,
    profile: Path | None = None,
) -> dict:
    """Each contender's step timed in one round robin per precision, with FLOPs and MFU; given
    `profile`, then the bf16 steps (compiled ones too) profiled there."""
    fns, items, unit, setup = contenders(
        what, device, compiled, sizes=sizes, compile_peer=compile_peer, precisions=precisions
    )
    # bf16 compiled steps only: compiling costs ~a minute per model and precision here.
    fns = {k: f for k, f in fns.items() if not k.startswith("train+compile/fp32/")}
    # Compiled steps do the eager step's FLOPs; the counter runs on eager code.
    flops = {k: step_flops(f) for k, f in fns.items() if not k.startswith("train+compile/")}
    seconds = {}
    for precision in precisions:
        seconds.update(
            interleaved_medians(
                {k: f for k, f in fns.items() if f"/{precision}/" in k}, repeats=repeats, warmup=2
            )
        )
    if profile:
        bf16 = {k: f for k, f in fns.items() if "/bf16/" in k and "every_position" not in k}
        write_profile(bf16, 3, f"python -m bench.gpu --sizes {sizes} --only {what} --profile", profile)
    rows = []
    for name, s in seconds.items():
        mode, precision, library = name.split("/")
        count = flops.get(name.replace("train+compile/", "train/"))
        row = {
            "mode": mode,
            "precision": precision,
            "library": library,
            "seconds": s,
            "per_s": items / s,
            "tflops": count / s / 1e12 if count else None,
        }
        if count and peaks:
            row["mfu"] = count / s / peaks[precision]
        rows.append(row)
    return {"unit": unit, "items": items, "setup": setup, "rows": rows, "flops": flops}


def decode_contenders(device: torch.device) -> tuple[dict[str, Callable[[], int]], dict]:
    """zoo's beam search and generate on the base Transformer (random weights, full length),
    named decode/PRECISION/LIBRARY, each returning the tokens it generated; and the setup."""
    from bench import translation_speed as ts

    preset = dataclasses.replace(ts.PRESETS["base"], decode_batch=64)
    src = ts.random_batch(preset, preset.decode_batch)[0].to(device)
    torch.manual_seed(0)
    ours, marian = ts.build_ours(preset).eval().to(device), ts.build_marian(preset).eval().to(device)
    forced = preset.src_len + ts.EXTRA_LEN

    def generate(bf16: bool) -> Callable[[], int]:
        def run() -> int:
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                out = marian.generate(
                    input_ids=src,
                    attention_mask=src != ts.PAD,
                    num_beams=ts.BEAM,
                    length_penalty=ts.ALPHA,
                    max_new_tokens=forced + 1,
                    do_sample=False,
                )
            return int((out[:, 1:] != ts.PAD).sum())

        return run

    def timed_decode(decode: Callable[[], int]) -> Callable[[], int]:
        """Without autograd, and finished on the device before the clock stops."""

        def run() -> int:
            with torch.inference_mode():
                tokens = decode()
            if device.type == "cuda":
                torch.cuda.synchronize()
            return tokens

        return run

    makers = {"zoo": lambda bf16: ts.zoo_beam(ours, [src], bf16=bf16), "generate": generate}
    fns = {
        f"decode/{precision}/{name}": timed_decode(make(precision == "bf16"))
        for precision in PRECISIONS
        for name, make in makers.items()
    }
    return fns, {"preset": "base", "batch": len(src), "beam": ts.BEAM, **vars(preset)}


def gpt_decode_contenders(
    device: torch.device, preset: str = "gpt2_small", prompt: int = 64, new: int = 128
) -> tuple[dict[str, Callable[[], int]], dict]:
    """Greedy generation with GPT-2's architecture (random weights, end-of-text forbidden so that
    every row makes `new` ids), named gpt/B/ENGINE for batches B of 1 and 8: zoo on its growing
    cache, zoo on the static cache with its step compiled (CUDA graphs), Hugging Face `generate`
    on its default dynamic cache and on its static cache (which `generate` compiles itself on a
    GPU, "reduce-overhead": Hugging Face's fastest path); each returns the ids it made, finished
    on the device."""
    from bench.gpt_speed import PRESETS as SIZES
    from bench.gpt_speed import models
    from zoo.decode import GenerationConfig, generate

    vocab = SIZES[preset].vocab
    zoo, hf = (m.to(device) for m in models(preset, vocab, noise=0.02))
    eot = vocab - 1
    settings = dict(max_new_tokens=new, min_new_tokens=new, eos_id=eot)
    static = dict(cache_implementation="static", compile=True)

    def zoo_run(prompts: list[list[int]], config: GenerationConfig) -> Callable[[], int]:
        def run() -> int:
            out = generate(zoo, prompts, config)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            return sum(map(len, out))

        return run

    def hf_run(ids: torch.Tensor, **cache: str) -> Callable[[], int]:
        def run() -> int:
            with torch.inference_mode():
                out = hf.generate(
                    ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=new,
                    min_new_tokens=new, pad_token_id=eot, **cache,
                )  # fmt: skip
            return int(out[:, ids.shape[1] :].numel())

        return run

    fns = {}
    for batch in (1, 8):
        ids = torch.randint(0, eot, (batch, prompt), generator=torch.Generator().manual_seed(batch))
        fns[f"gpt/{batch}/zoo"] = zoo_run(ids.tolist(), GenerationConfig(**settings))
        fns[f"gpt/{batch}/zoo_static_compiled"] = zoo_run(
            ids.tolist(), GenerationConfig(**settings, **static)
        )
        fns[f"gpt/{batch}/hf"] = hf_run(ids.to(device))
        fns[f"gpt/{batch}/hf_static"] = hf_run(ids.to(device), cache_implementation="static")
    return fns, {"preset": preset, "vocab": vocab, "prompt": prompt, "new": new, "batches": [1, 8]}


def gpt_decode_rows(device: torch.device, repeats: int, **sizes) -> dict:
    """New tokens/s of each engine, per batch its own round robin; the first call of each (the
    compiled one compiles there) is the warmup."""
    from bench.translation_speed import timed

    fns, setup = gpt_decode_contenders(device, **sizes)
    out, first_call_s = {}, {}
    for batch in setup["batches"]:
        chosen = {k.split("/")[2]: f for k, f in fns.items() if k.startswith(f"gpt/{batch}/")}
        for name, fn in chosen.items():
            start = time.perf_counter()
            fn()
            seconds = first_call_s[f"{batch}/{name}"] = time.perf_counter() - start
            print(f"gpt_decode batch {batch} {name}: first call {seconds:.1f} s", flush=True)
        speed, _ = timed(chosen, repeats)
        out[str(batch)] = {
            "tokens_per_s": speed,
            "static_compiled_vs_hf": speed["zoo_static_compiled"] / speed["hf"],
            "static_compiled_vs_zoo": speed["zoo_static_compiled"] / speed["zoo"],
            "static_compiled_vs_hf_static": speed["zoo_static_compiled"] / speed["hf_static"],
        }
    return {"setup": setup, "first_call_s": first_call_s, "batches": out}


def decode_rows(device: torch.device, repeats: int) -> dict:
    """zoo's beam search against generate, tokens/s, each precision its own round robin."""
    from bench.translation_speed import timed

    fns, setup = decode_contenders(device)
    out = {}
    for precision in PRECISIONS:
        speed, tokens = timed({k.split("/")[2]: f for k, f in fns.items() if f"/{precision}/" in k}, repeats)
        out[precision] = {
            "tokens_per_s": speed,
            "mean_length": {k: v / setup["batch"] for k, v in tokens.items()},
            "ratio": speed["zoo"] / speed["generate"],
        }
    return {"setup": setup, "precisions": out}


def markdown(result: dict, name: str) -> str:
    """The report of `result`, written as `name` (.json): the training benches one table per model,
    the decode benches their tables as the docs show them (bench.tables)."""
    peaks, ceiling = result["datasheet_peak"], result["measured_ceiling"]
    lines = [
        f"# GPU: zoo against its peers on {result['hardware']}",
        "",
        f"`{result['command']}`; torch {result['torch']}. Medians of {result['repeats']} interleaved "
        "rounds, one round robin per precision. MFU = counted model FLOPs / time / datasheet dense "
        f"peak ({', '.join(f'{k} {v / 1e12:.0f}' for k, v in peaks.items()) or 'unknown device'} "
        f"TFLOP/s); measured ceiling here (8192^3 product): "
        f"{', '.join(f'{k} {v / 1e12:.0f}' for k, v in ceiling.items())} TFLOP/s.",
        "",
    ]
    titles = {
        "vit": "ViT-B/16, 224 px, vs timm VisionTransformer",
        "bert": "BERT-base pretraining step vs Hugging Face BertForPreTraining",
        "bert512": "BERT-base pretraining step at 512 tokens vs Hugging Face BertForPreTraining",
        "translation": "Transformer base training step vs Hugging Face MarianMTModel",
    }
    for what, title in titles.items():
        if what not in result:
            continue
        r = result[what]
        lines += [
            f"## {title}",
            "",
            f"Setup: {r['setup']}.",
            "",
            f"| mode | precision | library | {r['unit']}/s | TFLOP/s | MFU | ratio zoo / peer "
            "| compiled / eager |",
            "|---|---|---|---|---|---|---|---|",
        ]
        by_key = {(x["mode"], x["precision"], x["library"]): x for x in r["rows"]}
        for (mode, precision, library), x in by_key.items():
            peer = next(
                (
                    y
                    for (m, p, lib), y in by_key.items()
                    if m == mode and p == precision and lib not in ("zoo", "zoo_every_position")
                ),
                None,
            )
            ratio = f"{peer['seconds'] / x['seconds']:.2f}x" if library == "zoo" and peer else ""
            eager = by_key.get(("train", precision, library)) if mode == "train+compile" else None
            speedup = f"{eager['seconds'] / x['seconds']:.2f}x" if eager else ""
            tflops = f"{x['tflops']:.0f}" if x["tflops"] else "-"
            mfu = f"{100 * x['mfu']:.1f}%" if x.get("mfu") else "-"
            lines.append(
                f"| {mode} | {precision} | {library} | {x['per_s']:,.0f} | {tflops} | {mfu} | {ratio} "
                f"| {speedup} |"
            )
        lines.append("")
    if "decode" in result:
        d = result["decode"]
        lines += [
            "## Beam search (4), base Transformer, random weights to full length, vs generate",
            "",
            f"Setup: {d['setup']}.",
            "",
            *TABLES["gpu_decode"].render_file(result, name),
            "",
        ]
    if "gpt_decode" in result:
        g = result["gpt_decode"]
        lines += [
            "## Greedy generation, GPT-2 architecture, random weights, vs Hugging Face generate",
            "",
            f"Setup: {g['setup']}; first calls (compiling included): {g['first_call_s']}.",
            "",
            *TABLES["gpu_gpt_decode"].render_file(result, name),
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        default="vit,bert,translation,decode",
        help="comma-separated benches (also bert512, gpt_decode)",
    )
    parser.add_argument("--repeats", type=int, default=10, help="interleaved timing rounds")
    parser.add_argument("--compile", action="store_true", help="add bf16 training steps under torch.compile")
    parser.add_argument(
        "--no-compile-peers", action="store_true", help="with --compile, compile zoo's steps alone"
    )
    parser.add_argument(
        "--sizes", choices=sorted(SIZES), default="recipe", help=f"items per training step: {SIZES}"
    )
    parser.add_argument("--precisions", default=",".join(PRECISIONS), help="comma-separated: fp32,bf16")
    add_out_option(parser)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="write torch.profiler tables (bf16 training steps, compiled ones too; fp32 beam "
        "search) to gpu_[realistic_]<bench>_profile.txt",
    )
    parser.add_argument(
        "--sdpa", choices=sorted(SDPA), default="", help="one SDPA kernel for every contender"
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench.gpu needs a CUDA device")
    device = torch.device("cuda")
    import transformers

    result = run_meta("bench.gpu", "transformers", transformers.__version__, {})
    result.update(
        sizes=args.sizes,
        repeats=args.repeats,
        datasheet_peak=datasheet_peak(),
        measured_ceiling=measured_ceiling(),
    )
    suffix = ("" if args.sizes == "recipe" else f"_{args.sizes}") + (
        f"_sdpa_{args.sdpa}" if args.sdpa else ""
    )
    result["sdpa"] = args.sdpa or "torch's choice"
    chip = re.sub(r"[^A-Za-z0-9]+", "_", result["hardware"]).strip("_").lower()
    stem = Path(args.out) / f"gpu_{chip}{suffix}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    precisions = tuple(args.precisions.split(","))
    # Set for the whole run: torch.compile picks the attention kernel when it traces.
    with sdpa_kernel([SDPA[args.sdpa]]) if args.sdpa else contextlib.nullcontext():
        run_benches(args, device, result, stem, suffix, precisions)


def run_benches(
    args: argparse.Namespace,
    device: torch.device,
    result: dict,
    stem: Path,
    suffix: str,
    precisions: tuple[str, ...],
) -> None:
    """Each bench of --only in turn, the result written after each."""
    for what in args.only.split(","):
        profile = stem.parent / f"gpu{suffix}_{what}_profile.txt" if args.profile else None
        start = time.perf_counter()
        if what == "gpt_decode":
            result[what] = gpt_decode_rows(device, max(3, args.repeats // 3))
        elif what == "decode":
            if profile:
                fns = {k: f for k, f in decode_contenders(device)[0].items() if k.startswith("decode/fp32/")}
                write_profile(fns, 1, "python -m bench.gpu --only decode --profile", profile)
            result[what] = decode_rows(device, max(3, args.repeats // 3))
        else:
            result[what] = training_rows(
                what,
                device,
                args.repeats,
                args.compile,
                result["datasheet_peak"],
                sizes=args.sizes,
                compile_peer=not args.no_compile_peers,
                precisions=precisions,
                profile=profile,
            )
        result[what]["wall_s"] = time.perf_counter() - start
        torch.cuda.empty_cache()
        # Written after each bench: a later failure or time limit keeps what was measured.
        stem.with_suffix(".json").write_text(json.dumps(result, indent=2, default=str) + "\n")
        report = markdown(result, stem.with_suffix(".json").name)
        stem.with_suffix(".md").write_text(report)
        print(report, flush=True)


if __name__ == "__main__":
    main()
