"""int8 inference (zoo.quantize, `--precision int8`) against float32 and CTranslate2 int8 on the
same models, on the CPU, the contenders taking turns in one run (bench/timing.py).

    python -m bench.int8_speed methods [--repeats 3] [--compile] [--threads 1]
    python -m bench.int8_speed bert [--repeats 3] [--threads 1]
    python -m bench.int8_speed gpt [--run runs/gpt-enwiki | --preset mini] [--repeats 3] [--threads 1]
    python -m bench.int8_speed translation [--run runs/translation-demo] [--repeats 3] [--threads 1]

- methods: how zoo.quantize's method was chosen. A BERT encoder of all-MiniLM-L6-v2's size
  (random weights) at batch 32 x 128: float32; torch's `quantize_dynamic` as shipped (7-bit
  activations); zoo.quantize (the same, 8-bit activations on VNNI CPUs), and smoothed
  (SmoothQuant, calibrated on other random ids than the timed ones); torchao's
  `Int8DynamicActivationInt8WeightConfig` in eager mode and, with --compile, under
  `torch.compile` with inductor's freezing. torchao's rows appear only where it is installed (it
  is not a dependency). Seconds per forward, and the lowest cosine similarity of a row's hidden
  states to float32's.
- bert: the same encoder and batch (all positions real): zoo float32 and int8 (zoo.quantize)
  against CTranslate2's Encoder in float32 and int8 (`compute_type`, on zoo's weights converted
  by write_ctranslate2_bert through CTranslate2's own converter), CTranslate2 in a process of its
  own (bench.ct2_process), its outputs left there when timed. Seconds per forward, and each
  engine's largest absolute difference and lowest cosine similarity of a token's hidden states to
  zoo float32's.
- gpt: greedy generation with the KV cache on a trained GPT run (or, with --preset, bench.gpt_speed's
  random model of that size), as bench.gpt_speed times it (prompts of 64 random ids, 128 new ids
  forced, batch 1 and 8; prefill = the call for one new id, decode = the rest; each timed call
  after an untimed one-id call of its engine): zoo float32 and int8, each also on the static
  cache with its step compiled (`_compiled`), Hugging Face float32 on the same weights,
  CTranslate2 float32 and int8 (`compute_type`, on zoo's weights converted by
  write_ctranslate2_gpt); then a profile of zoo's int8 generate (int8_gpt_decode_profile.txt).
- translation: beam 4 (alpha 0.6) over a trained run's test set, as bench.translation_speed
  --run times it: zoo float32 and int8 under the exact stopping rule and under CTranslate2's
  (patience 1), CTranslate2 float32 and int8 on the same weights. Generated tokens per second.

Writes int8_speed_WHAT.{json,md} into --out.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from bench.output import add_out_option
from bench.tables import RATE, RATIO, Column
from bench.tables import markdown as table
from bench.timing import cpu_model, interleaved_medians, run_meta
from zoo.blocks.linear import Linear
from zoo.quantize import FULL_RANGE, input_ranges, plain_linear, quantize_int8

MINILM = dict(vocab_size=30522, dim=384, num_layers=6, num_heads=12, ffn_dim=1536)
BATCH, LENGTH = 32, 128


def plain_linears(model: nn.Module) -> nn.Module:
    """`model` with every zoo Linear swapped in place for zoo.quantize.plain_linear's copy:
    torch's quantize_dynamic would leave the zoo's layers float32."""
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if type(child) is Linear:
                setattr(parent, name, plain_linear(child))
    return model


def torch_dynamic(model: nn.Module) -> nn.Module:
    """torch's quantize_dynamic as its documentation shows it (per-channel weights, as zoo's), on
    the model's layers as plain nn.Linear."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    model = plain_linears(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)


def torchao_int8(model: nn.Module) -> nn.Module:
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

    quantize_(model, Int8DynamicActivationInt8WeightConfig())
    return model


def smoothed_int8(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """zoo.quantize with SmoothQuant's smoothing (--int8_calibration), calibrated on other ids
    than the timed ones."""
    ids = torch.randint(
        1000, MINILM["vocab_size"], (BATCH, LENGTH), generator=torch.Generator().manual_seed(1)
    )
    ranges = input_ranges(model, lambda: model.encode(ids))
    return quantize_int8(copy.deepcopy(model), ranges).encode


def method_forwards(compiled: bool) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Each method's encoder forward, ids (B, T) -> hidden states (B, T, D)."""
    from zoo.models.bert import Bert

    torch.manual_seed(0)
    model = Bert(**MINILM).eval()
    forwards = {
        "fp32": model.encode,
        "torch quantize_dynamic": torch_dynamic(copy.deepcopy(model)).encode,
        "zoo.quantize": quantize_int8(copy.deepcopy(model)).encode,
        "zoo.quantize, smoothed": smoothed_int8(model),
    }
    try:
        forwards["torchao eager"] = torchao_int8(copy.deepcopy(model)).encode
    except ImportError:
        return forwards
    if compiled:
        from torch._inductor import config

        config.freezing = True  # inductor's int8 CPU kernels for torchao's weights need frozen weights
        forwards["fp32 compiled"] = torch.compile(model.encode)
        forwards["torchao compiled"] = torch.compile(torchao_int8(copy.deepcopy(model)).encode)
    return forwards


@torch.no_grad()
def methods(repeats: int, compiled: bool) -> tuple[list[dict], str]:
    """Seconds per forward and the lowest cosine to float32 of each method, and what ran."""
    forwards = method_forwards(compiled)
    ids = torch.randint(
        1000, MINILM["vocab_size"], (BATCH, LENGTH), generator=torch.Generator().manual_seed(0)
    )
    reference = forwards["fp32"](ids)
    cosine, first_call = {}, {}
    for name, forward in forwards.items():  # the first call compiles what is compiled
        start = time.perf_counter()
        cosine[name] = F.cosine_similarity(forward(ids), reference, dim=-1).min().item()
        first_call[name] = time.perf_counter() - start
    seconds = interleaved_medians(
        {name: partial(forward, ids) for name, forward in forwards.items()}, repeats=repeats
    )
    rows = [
        {
            "method": name,
            "seconds": s,
            "first_call_seconds": first_call[name],
            "vs_fp32": seconds["fp32"] / s,
            "min_cosine": cosine[name],
        }
        for name, s in seconds.items()
    ]
    return (
        rows,
        f"a BERT encoder of all-MiniLM-L6-v2's size ({MINILM}), random weights, batch {BATCH} x {LENGTH}",
    )


@contextmanager
def bert_contenders(threads: int) -> Iterator[tuple[dict, dict, dict]]:
    """zoo's BERT encoder (float32, int8) and CTranslate2's Encoder (float32, int8, in processes
    of their own, closed on exit) on the same weights and batch: the forwards, each one's hidden
    states (its first call: also the warmup) and a short call of each (a primer)."""
    from bench.ct2_process import Remote
    from zoo.convert.ctranslate2_bert import write_ctranslate2_bert
    from zoo.convert.hf_bert import LoadedBert
    from zoo.data.wordpiece import WordPieceTokenizer
    from zoo.models.bert import Bert, BertModelConfig

    torch.manual_seed(0)
    model = Bert(**MINILM).eval()
    config = BertModelConfig(**{key: value for key, value in MINILM.items() if key != "vocab_size"})
    # ids go in directly; the converter pads this vocabulary to the model's embeddings
    tokenizer = WordPieceTokenizer.whole_words(["random weights"])
    int8 = quantize_int8(copy.deepcopy(model))
    ids = torch.randint(
        1000, MINILM["vocab_size"], (BATCH, LENGTH), generator=torch.Generator().manual_seed(0)
    )
    id_rows = ids.tolist()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ct2"  # float32: the engine quantizes at load, as for the GPT rows
        write_ctranslate2_bert(LoadedBert(model, tokenizer, config, folder), folder)
        ct2 = {
            kind: Remote("Encoder", str(folder), device="cpu", compute_type=kind, intra_threads=threads)
            for kind in ("float32", "int8")
        }
    try:
        with torch.no_grad():
            hidden = {
                "zoo": model.encode(ids),
                "zoo_int8": int8.encode(ids),
                **{
                    f"ct2_{name}": torch.from_numpy(ct2[kind].forward_batch(id_rows).last_hidden_state)
                    for name, kind in (("fp32", "float32"), ("int8", "int8"))
                },
            }
        fns = {
            "zoo": torch.no_grad()(partial(model.encode, ids)),
            "zoo_int8": torch.no_grad()(partial(int8.encode, ids)),
            "ct2_fp32": partial(ct2["float32"].forward_batch_untransferred, id_rows),
            "ct2_int8": partial(ct2["int8"].forward_batch_untransferred, id_rows),
        }
        primers = {
            "zoo": torch.no_grad()(partial(model.encode, ids[:1, :8])),
            "zoo_int8": torch.no_grad()(partial(int8.encode, ids[:1, :8])),
            "ct2_fp32": partial(ct2["float32"].forward_batch_untransferred, [id_rows[0][:8]]),
            "ct2_int8": partial(ct2["int8"].forward_batch_untransferred, [id_rows[0][:8]]),
        }
        yield fns, hidden, primers
    finally:
        for engine in ct2.values():
            engine.close()


def bert(repeats: int) -> tuple[list[dict], str]:
    """Seconds per forward of zoo's BERT encoder (float32, int8) and CTranslate2's Encoder
    (float32, int8) on the same weights and batch, their agreement with zoo float32, and what ran."""
    with bert_contenders(torch.get_num_threads()) as (fns, hidden, primers):
        # As bench.gpt_speed: a short untimed call first, so that no engine's timed call pays for
        # waking its threads after the other process's call.
        seconds = interleaved_medians(fns, repeats=repeats, warmup=0, primers=primers)
    reference = hidden["zoo"]
    rows = [
        {
            "engine": engine,
            "seconds": s,
            "tokens_per_s": BATCH * LENGTH / s,
            **{f"vs_{base}": seconds[base] / s for base in ("zoo", "ct2_fp32", "ct2_int8")},
            "max_abs_diff_vs_zoo": (hidden[engine] - reference).abs().max().item(),
            "min_cosine_vs_zoo": F.cosine_similarity(hidden[engine], reference, dim=-1).min().item(),
        }
        for engine, s in seconds.items()
    ]
    return (
        rows,
        f"a BERT encoder of all-MiniLM-L6-v2's size ({MINILM}), random weights, batch {BATCH} x "
        f"{LENGTH} random ids (no padding), last hidden states (LayerNorm-ed: unit scale)",
    )


def trained_gpt(run: str) -> nn.Module:
    """The run's best GPT in eval mode."""
    from tasks.gpt.config import GPTConfig
    from tasks.gpt.spec import GPTOptions, GPTSpec
    from zoo.train import load_trained

    return GPTSpec().load([load_trained(run, GPTConfig, which="best")], GPTOptions(run=run)).model.eval()


def gpt_model(run: str, preset: str) -> tuple[nn.Module, str]:
    """The run's trained GPT, or with `preset` bench.gpt_speed's random one of that size (its
    generation weights: speed does not depend on them); and its name."""
    if not preset:
        return trained_gpt(run), run
    from bench.gpt_speed import PRESETS, models

    if preset not in PRESETS:
        print(f"bench.int8_speed: --preset {preset!r}: choose from {', '.join(PRESETS)}", file=sys.stderr)
        raise SystemExit(2)
    return models(preset, PRESETS[preset].vocab, noise=0.3)[0], f"the {preset} preset, random weights"


def gpt(run: str, preset: str, repeats: int) -> tuple[list[dict], str]:
    """Prefill and decode tokens/s of the engines at batch 1 and 8 (bench.gpt_speed's rows, with
    zoo's and CTranslate2's int8 and zoo's compiled static-cache step in both precisions), and
    what ran."""
    from bench.gpt_speed import BATCHES, Preset, ct2_generator, engines, random_prompts, rates
    from zoo.convert.hf_gpt2 import hf_model_of

    model, name = gpt_model(run, preset)
    hf, int8 = hf_model_of(model).eval(), quantize_int8(copy.deepcopy(model))
    p = Preset(vocab=model.vocab_size, train_batch=0, train_context=0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder, threads = Path(tmp) / "ct2", torch.get_num_threads()
        ct2 = {kind: ct2_generator(model, folder, threads, kind) for kind in ("float32", "int8")}
        for batch in BATCHES:
            prompts = random_prompts(p, batch)
            runs = engines(model, hf, ct2["float32"], prompts)
            int8_runs = engines(int8, hf, ct2["int8"], prompts)  # its zoo and CTranslate2 rows, int8
            runs.update(
                zoo_int8=int8_runs["zoo"],
                zoo_int8_compiled=int8_runs["zoo_compiled"],
                ct2_int8=int8_runs["ct2_fp32"],
            )
            del runs["zoo_row_major"]  # bench.gpt_speed's ablation, not int8's
            outputs = {engine: generate(p.new) for engine, generate in runs.items()}  # also the warmup
            calls = [(f"{engine}/{new}", fn, new) for engine, fn in runs.items() for new in (1, p.new)]
            fns = {key: partial(fn, new) for key, fn, new in calls}
            primers = {key: partial(fn, 1) for key, fn, _ in calls}  # as bench.gpt_speed: threads awake
            seconds = interleaved_medians(fns, repeats=repeats, warmup=0, primers=primers)
            rows += rates(seconds, outputs, batch, p)
    for row in rows:
        ct2_int8 = next(r for r in rows if (r["batch"], r["engine"]) == (row["batch"], "ct2_int8"))
        row["decode_vs_ct2_int8"] = row["decode_tokens_per_s"] / ct2_int8["decode_tokens_per_s"]
    return (
        rows,
        f"{name}: prompts of {p.prompt} random ids, {p.new} new ids each (end-of-text forbidden until then)",
    )


def gpt_profile(run: str, preset: str, path: Path, command: str) -> None:
    """torch.profiler key averages of zoo's int8 generate on the model, at each batch size timed."""
    from bench.gpt_speed import Preset, generate_profile

    model, run = gpt_model(run, preset)
    model = quantize_int8(model)
    p = Preset(vocab=model.vocab_size, train_batch=0, train_context=0)
    header = (
        f"# Profile of zoo.decode.generate on {run} with --precision int8 (zoo.quantize), `{command}`\n"
        f"# prompts of {p.prompt} ids, {p.new} new ids each, {torch.get_num_threads()} thread(s), torch "
        f"{torch.__version__}\n# machine: {cpu_model()}, load average {os.getloadavg()[0]:.1f} at the start\n"
    )
    path.write_text(header + "\n" + generate_profile(model, p, row_limit=15))


def translation(run: str, repeats: int) -> tuple[list[dict], str]:
    """Generated tokens/s of zoo (float32, int8; exact rule and patience 1) and CTranslate2
    (float32, int8) over the run's test set (bench.translation_speed's machinery), and what ran."""
    from bench.translation_speed import ct2_beam, ct2_translator, timed, trained_decode

    translator, zoo, sources, name = trained_decode(run)
    int8_translator, int8_zoo, _, _ = trained_decode(run)
    quantize_int8(int8_translator.model)  # in place: the model int8_zoo decodes with
    pieces = translator.tokenizer.pieces(range(translator.tokenizer.vocab_size))
    threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ct2"
        ct2 = {
            kind: ct2_translator(translator.model, pieces, folder, threads, kind)
            for kind in ("float32", "int8")
        }
        fns = {
            "zoo": zoo(),
            "zoo_int8": int8_zoo(),
            "zoo_patience1": zoo(patience=1.0),
            "zoo_int8_patience1": int8_zoo(patience=1.0),
            "ct2_fp32": ct2_beam(ct2["float32"], sources),
            "ct2_int8": ct2_beam(ct2["int8"], sources),
        }
        speed, tokens = timed(fns, repeats)
    rows = [
        {
            "engine": engine,
            "tokens_per_s": s,
            "mean_length": tokens[engine] / len(sources),
            **{f"vs_{base}": s / speed[base] for base in ("zoo", "ct2_fp32", "ct2_int8")},
        }
        for engine, s in speed.items()
    ]
    return rows, f"{run}: beam 4, alpha 0.6, {len(sources)} sentences of {name}"


COLUMNS = {
    "methods": (
        Column("method", "method"),
        Column("seconds a forward", "seconds", "{:.3f}"),
        Column("first call (compiles)", "first_call_seconds", "{:.1f}"),
        Column("vs fp32", "vs_fp32", RATIO),
        Column("lowest cosine to fp32", "min_cosine", "{:.5f}"),
    ),
    "bert": (
        Column("engine", "engine"),
        Column("seconds a forward", "seconds", "{:.3f}"),
        Column("tokens/s", "tokens_per_s", RATE),
        Column("vs zoo fp32", "vs_zoo", RATIO),
        Column("vs CT2 fp32", "vs_ct2_fp32", RATIO),
        Column("vs CT2 int8 (target >= 1x)", "vs_ct2_int8", RATIO),
        Column("largest abs difference to zoo fp32", "max_abs_diff_vs_zoo", "{:.1e}"),
        Column("lowest cosine to zoo fp32", "min_cosine_vs_zoo", "{:.5f}"),
    ),
    "gpt": (
        Column("batch", "batch"),
        Column("engine", "engine"),
        Column("prefill tokens/s", "prefill_tokens_per_s", RATE),
        Column("decode tokens/s", "decode_tokens_per_s", RATE),
        Column("decode vs CT2 fp32", "decode_vs_ct2", RATIO),
        Column("decode vs CT2 int8 (target >= 1x)", "decode_vs_ct2_int8", RATIO),
        Column("ids as zoo fp32", "same_ids_as_zoo", "{:.0%}"),
    ),
    "translation": (
        Column("engine", "engine"),
        Column("tokens/s", "tokens_per_s", RATE),
        Column("mean length", "mean_length", "{:.2f}"),
        Column("vs zoo fp32", "vs_zoo", RATIO),
        Column("vs CT2 fp32", "vs_ct2_fp32", RATIO),
        Column("vs CT2 int8 (target >= 1x)", "vs_ct2_int8", RATIO),
    ),
}


def markdown(what: str, result: dict) -> str:
    return "\n".join(
        [
            f"# int8 inference: {what}\n",
            f"`{result['command']}` on {result['cpu']}, {result['threads']} thread(s), load average "
            f"{result['load_average']:.1f} at the start; torch {result['torch']}, ctranslate2 "
            f"{result['ctranslate2']}; zoo's int8 activations in 8 bits (VNNI): {result['full_range']}. "
            f"{result['what']}; medians of {result['repeats']} interleaved rounds.\n",
            *table(result["rows"], COLUMNS[what]),
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=sorted(COLUMNS), help="what to time (see above)")
    parser.add_argument(
        "--run",
        default="",
        help="gpt, translation: the trained run ('' = runs/gpt-enwiki, runs/translation-demo)",
    )
    parser.add_argument(
        "--preset", default="", help="gpt: time bench.gpt_speed's random model of this size instead of a run"
    )
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timing rounds")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads")
    parser.add_argument("--compile", action="store_true", help="methods: also torch.compile's rows")
    add_out_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import ctranslate2

    result = {
        **run_meta("bench.int8_speed", "ctranslate2", ctranslate2.__version__, {}),
        "cpu": cpu_model(),
        "threads": args.threads,
        "load_average": os.getloadavg()[0],
        "full_range": FULL_RANGE,
        "repeats": args.repeats,
    }
    timers = {
        "methods": partial(methods, args.repeats, args.compile),
        "bert": partial(bert, args.repeats),
        "gpt": partial(gpt, args.run or "runs/gpt-enwiki", args.preset, args.repeats),
        "translation": partial(translation, args.run or "runs/translation-demo", args.repeats),
    }
    result["rows"], result["what"] = timers[args.what]()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"int8_speed_{args.what}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"int8_speed_{args.what}.md").write_text(markdown(args.what, result))
    print(markdown(args.what, result))
    if args.what == "gpt":
        gpt_profile(
            args.run or "runs/gpt-enwiki",
            args.preset,
            args.out / "int8_gpt_decode_profile.txt",
            result["command"],
        )


if __name__ == "__main__":
    main()
