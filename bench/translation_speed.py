"""Decoding speed of zoo against Hugging Face `generate` and CTranslate2, and training speed
against Hugging Face's MarianMTModel, at the same dimensions.

    python -m bench.translation_speed [--preset small|base] [--repeats 3] [--threads 1,2]
        [--run RUN] [--train] [--profile FILE]

Decoding (beam 4, alpha 0.6, length limit source length + 50, KV caches), measured in one run,
the contenders taking turns (medians of interleaved repeats, so load from other processes hits
all alike), at each thread count:

- random weights, forced full length: zoo, `MarianMTModel.generate` built to the same
  dimensions (post-norm, ReLU, sinusoidal positions, sqrt(D)-scaled embeddings tied three ways,
  SDPA), and CTranslate2 with zoo's very weights (tasks.translation.export), fp32 and int8.
  Random models rarely end early, so every engine decodes to the limit; the mean generated
  lengths are reported to show that the work compared is the same. zoo under bf16 autocast is
  reported separately.
- `--run RUN`: a trained model with real early stopping on real test sentences (the Multi30k
  test set from the data directory if present, else the run's own test split): zoo and
  CTranslate2 with the same weights (Hugging Face has no loader for zoo's weights, so it appears
  only in the random-weight rows). CTranslate2 stops a sentence once beam-size hypotheses have
  ended (its `patience` 1); zoo by default only once no live beam can win. zoo is timed both
  ways: `zoo` (exact) and `zoo_patience1` (CTranslate2's rule, `decode.patience=1`).

Throughput is generated tokens per second (best hypotheses, EOS counted). Targets: >= 2.5x
`generate` and >= 1.0x CTranslate2 fp32 at the same precision. `--train` times training instead
(target tokens/s of forward + loss + backward + Adam, each library's as its training loop builds
it, against Marian, fp32 and bf16 autocast, at each thread count;
bench/results/translation_train_speed.{json,md}). `--profile FILE` writes torch.profiler key
averages of zoo's beam search on the preset, or on RUN with `--run` (one thread), instead.
Writes bench/results/translation_speed.{json,md}.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import MarianConfig, MarianMTModel

from bench.ct2_process import Remote
from bench.optimizers import hf_trainer_optimizer, zoo_optimizer
from bench.output import add_out_option
from bench.timing import cpu, cpu_model, hardware, interleaved_medians, synced
from zoo.data.special import SPECIAL_IDS
from zoo.decode import beam_search
from zoo.models import ModelConfig, build_model
from zoo.quantize import quantize_int8

PAD, BOS, EOS = SPECIAL_IDS.pad, SPECIAL_IDS.bos, SPECIAL_IDS.eos


@dataclass
class Preset:
    layers: int
    dim: int
    ffn_dim: int
    heads: int
    vocab: int
    src_len: int
    decode_batch: int
    train_batch: int = 128  # x 31 target tokens: ~3,900, the Multi30k recipe's batch


PRESETS = {
    "small": Preset(layers=3, dim=256, ffn_dim=1024, heads=4, vocab=8000, src_len=30, decode_batch=32),
    "base": Preset(layers=6, dim=512, ffn_dim=2048, heads=8, vocab=37000, src_len=30, decode_batch=32),
}
EXTRA_LEN = 50
BEAM = 4
ALPHA = 0.6


def build_ours(p: Preset) -> torch.nn.Module:
    cfg = ModelConfig(
        encoder_layers=p.layers,
        decoder_layers=p.layers,
        dim=p.dim,
        ffn_dim=p.ffn_dim,
        num_heads=p.heads,
        dropout=0.1,
        max_len=256,
    )
    return build_model(cfg, p.vocab, p.vocab, PAD)


def build_marian(p: Preset) -> MarianMTModel:
    cfg = MarianConfig(
        vocab_size=p.vocab,
        decoder_vocab_size=p.vocab,
        d_model=p.dim,
        encoder_layers=p.layers,
        decoder_layers=p.layers,
        encoder_attention_heads=p.heads,
        decoder_attention_heads=p.heads,
        encoder_ffn_dim=p.ffn_dim,
        decoder_ffn_dim=p.ffn_dim,
        activation_function="relu",
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
        max_position_embeddings=256,
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        pad_token_id=PAD,
        eos_token_id=EOS,
        decoder_start_token_id=BOS,
        forced_eos_token_id=EOS,
        attn_implementation="sdpa",
    )
    return MarianMTModel(cfg)


SMOOTHING = 0.1  # the recipes' label smoothing, in both training steps


# The paper's Adam settings, in each library's optimizer as its training loop builds it
# (bench/optimizers.py): zoo's runner and the Hugging Face Trainer both take torch's fused kernel.
ADAM = dict(betas=(0.9, 0.98), eps=1e-9)
OPTIMIZERS = {
    "zoo": lambda model: zoo_optimizer(model, "adam", 1e-4, **ADAM),
    "marian": lambda model: hf_trainer_optimizer(model, 1e-4, **ADAM),
}


def trainer(
    model: torch.nn.Module,
    loss_of,
    src: torch.Tensor,
    tgt_in: torch.Tensor,
    tgt_out: torch.Tensor,
    optimizer: torch.optim.Optimizer,
):
    """One optimizer step per call: forward, summed label-smoothed token loss, backward, Adam."""

    def step() -> None:
        loss_of(model, src, tgt_in, tgt_out).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def zoo_loss(
    model: torch.nn.Module, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor
) -> torch.Tensor:
    """zoo's training step as the translation task runs it: the projection and loss fused."""
    return model(src, tgt_in, tgt_out, smoothing=SMOOTHING).loss


def marian_loss(
    model: MarianMTModel, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor
) -> torch.Tensor:
    logits = model(input_ids=src, attention_mask=src != PAD, decoder_input_ids=tgt_in).logits
    return F.cross_entropy(
        logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD, label_smoothing=SMOOTHING, reduction="sum"
    )


def random_batch(p: Preset, rows: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sources (rows, S) ending in EOS, and teacher-forced target input/output, all random ids."""
    g = torch.Generator().manual_seed(0)
    src = torch.randint(EOS + 1, p.vocab, (rows, p.src_len), generator=g)
    src[:, -1] = EOS
    tgt = torch.randint(EOS + 1, p.vocab, (rows, p.src_len + 1), generator=g)
    tgt_in, tgt_out = tgt.clone(), tgt.clone()
    tgt_in[:, 0], tgt_out[:, -1] = BOS, EOS
    return src, tgt_in, tgt_out


def autocast_step(step, precision: str, device: torch.device | None = None):
    device = device or torch.device("cpu")

    def run() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
            step()

    return run


def training_contenders(
    p: Preset,
    device: torch.device | None = None,
    compiled: bool = False,
    *,
    compile_peer: bool = True,
    precisions: tuple[str, ...] = ("fp32", "bf16"),
) -> tuple[dict, int]:
    """zoo's and Marian's training steps named MODE/PRECISION/LIBRARY as in every peer bench
    (mode train+compile too when `compiled`: zoo's, and Marian's with `compile_peer`), each
    synchronising a GPU, and the target tokens a step trains on."""
    device = device or torch.device("cpu")
    src, tgt_in, tgt_out = (t.to(device) for t in random_batch(p, p.train_batch))
    torch.manual_seed(0)
    models = {
        ("train", "zoo"): (build_ours(p).train().to(device), zoo_loss),
        ("train", "marian"): (build_marian(p).train().to(device), marian_loss),
    }
    if compiled:
        models.update(
            {
                ("train+compile", library): (torch.compile(model), loss)
                for (_, library), (model, loss) in list(models.items())
                if compile_peer or library == "zoo"
            }
        )
    fns = {
        f"{mode}/{precision}/{library}": synced(
            autocast_step(
                trainer(model, loss, src, tgt_in, tgt_out, OPTIMIZERS[library](model)), precision, device
            ),
            device,
        )
        for precision in precisions
        for (mode, library), (model, loss) in models.items()
    }
    return fns, int((tgt_out != PAD).sum())


def training(p: Preset, threads: list[int], repeats: int) -> dict:
    """Target tokens/s of zoo's and Marian's training steps, fp32 and bf16 autocast, per thread
    count; each precision its own interleaved round robin over the two (amid 8-9 s bf16 steps
    zoo's fp32 step measured ~4% slower than amid fp32 steps only, Marian's <1%: one training
    run never alternates precisions)."""
    fns, tokens = training_contenders(p)
    out = {}
    for n in threads:
        torch.set_num_threads(n)
        seconds = {}
        for precision in ("fp32", "bf16"):
            seconds.update(
                interleaved_medians({k: f for k, f in fns.items() if f"/{precision}/" in k}, repeats=repeats)
            )
        out[n] = {
            precision: {
                "zoo_tokens_per_s": tokens / seconds[f"train/{precision}/zoo"],
                "marian_tokens_per_s": tokens / seconds[f"train/{precision}/marian"],
                "ratio": seconds[f"train/{precision}/marian"] / seconds[f"train/{precision}/zoo"],
            }
            for precision in ("fp32", "bf16")
        }
    return {"tokens": tokens, "threads": out}


def ct2_translator(
    model: torch.nn.Module, pieces: list[str], folder: Path, threads: int, compute_type: str
) -> Remote:
    """CTranslate2 running `model`'s own weights (converted once into `folder`), in a process of
    its own (bench.ct2_process)."""
    from zoo.convert.ctranslate2 import ctranslate2_spec

    if not (folder / "model.bin").exists():
        spec = ctranslate2_spec(model, pieces)
        spec.validate()
        spec.optimize()
        folder.mkdir(parents=True)
        spec.save(str(folder))
    return Remote(
        "Translator",
        str(folder),
        device="cpu",
        compute_type=compute_type,
        intra_threads=threads,
        inter_threads=1,
    )


def timed(fns: dict, repeats: int) -> dict[str, float]:
    """Interleaved medians of callables that return the number of tokens they generated:
    tokens per second, and each one's tokens."""
    tokens: dict[str, int] = {}

    def recording(name, fn):
        return lambda: tokens.__setitem__(name, fn())

    seconds = interleaved_medians({n: recording(n, f) for n, f in fns.items()}, repeats=repeats)
    return {n: tokens[n] / seconds[n] for n in fns}, tokens


def zoo_beam(model, batches: list[torch.Tensor], bf16: bool = False):
    def decode() -> int:
        with torch.autocast(batches[0].device.type, dtype=torch.bfloat16, enabled=bf16):
            return sum(
                len(h) + 1
                for src in batches
                for h in beam_search(
                    model,
                    src,
                    special=SPECIAL_IDS,
                    beam_size=BEAM,
                    alpha=ALPHA,
                    max_len_a=1.0,
                    max_len_b=EXTRA_LEN,
                ).best()
            )

    return decode


def ct2_beam(translator, sources: list[list[str]], *, forced: int | None = None, max_batch: int = 32):
    def decode() -> int:
        lengths = {} if forced is None else {"min_decoding_length": forced}
        results = translator.translate_batch(
            sources,
            beam_size=BEAM,
            length_penalty=ALPHA,
            max_batch_size=max_batch,
            max_decoding_length=forced or 256,
            suppress_sequences=[["<s>"], ["<pad>"]],
            **lengths,
        )
        return sum(len(r.hypotheses[0]) + 1 for r in results)

    return decode


def hf_beam(marian: MarianMTModel, src: torch.Tensor, forced: int):
    """Marian's `generate` with beam 4 on `src`, allowed `forced` + 1 new tokens: a callable that
    returns the tokens it generated."""

    def decode() -> int:
        with torch.inference_mode():
            out = marian.generate(
                input_ids=src,
                attention_mask=src != PAD,
                num_beams=BEAM,
                length_penalty=ALPHA,
                max_new_tokens=forced + 1,
                do_sample=False,
            )
        return int((out[:, 1:] != PAD).sum())

    return decode


def full_length_tokens(p: Preset) -> int:
    """The tokens one batch of random sources generates when every row runs to the limit: its
    source's length plus EXTRA_LEN, then EOS."""
    return p.decode_batch * (p.src_len + EXTRA_LEN + 1)


def random_contenders(p: Preset, folder: Path, threads: int, *, int8: bool = False) -> dict:
    """zoo (fp32 and bf16 autocast), generate and CTranslate2 (fp32, int8, at `threads`) on one
    batch of random sources, decoded to the limit: callables that return the tokens they generated.
    `int8`: zoo's int8 linears (zoo.quantize, on a copy of the same weights) too, as `zoo_int8`."""
    src, _, _ = random_batch(p, p.decode_batch)
    torch.manual_seed(0)
    ours, marian = build_ours(p).eval(), build_marian(p).eval()
    pieces = ["<pad>", "<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(EOS + 1, p.vocab)]
    sources = [[pieces[i] for i in row[:-1]] for row in src.tolist()]  # the engine adds EOS
    forced = p.src_len + EXTRA_LEN  # zoo's limit (the source's EOS counted), then EOS
    translator = partial(ct2_translator, ours, pieces, folder, threads)
    fns = {
        "zoo": zoo_beam(ours, [src]),
        "zoo_bf16": zoo_beam(ours, [src], bf16=True),
        "generate": hf_beam(marian, src, forced),
        "ct2_fp32": ct2_beam(translator("float32"), sources, forced=forced),
        "ct2_int8": ct2_beam(translator("int8"), sources, forced=forced),
    }
    if int8:
        fns["zoo_int8"] = zoo_beam(quantize_int8(copy.deepcopy(ours)), [src])
    return fns


def random_weights(p: Preset, threads: list[int], repeats: int, folder: Path) -> dict:
    """zoo, generate and CTranslate2 on one batch of random sources, decoded to the limit; zoo
    under bf16 autocast in a round robin of its own with zoo fp32."""
    rows = {}
    for n in threads:
        torch.set_num_threads(n)
        fns = random_contenders(p, folder, n)
        bf16 = {"zoo_bf16": fns.pop("zoo_bf16"), "zoo": fns["zoo"]}
        speed, tokens = timed(fns, repeats)
        bf16_speed, bf16_tokens = timed(bf16, max(1, repeats - 1))
        rows[n] = {
            "tokens_per_s": speed,
            "mean_length": {k: v / p.decode_batch for k, v in tokens.items()},
            "bf16": {
                "tokens_per_s": bf16_speed,
                "mean_length": {k: v / p.decode_batch for k, v in bf16_tokens.items()},
            },
        }
    return rows


def test_sources(run: str) -> tuple:
    """The translator of `run`, and the Multi30k test set (test_2016_flickr) from the data
    directory if present, else the
    run's own test split, encoded with its tokenizer, and the split's name."""
    from tasks.translation.config import TranslationConfig
    from tasks.translation.data import load_pairs, split_names
    from tasks.translation.spec import TranslationOptions, TranslationSpec
    from zoo.train import load_trained

    trained = load_trained(run, TranslationConfig, which="best")
    translator = TranslationSpec().load([trained], TranslationOptions(run=run))
    data = translator.trained.cfg.data
    try:
        multi30k = type(data)(**{**asdict(data), "source": "multi30k"})
        pairs, name = list(load_pairs(multi30k, "test")), "multi30k " + split_names(multi30k)["test"]
    except Exception:  # no Multi30k in the data directory: the run's own test split
        pairs, name = list(load_pairs(data, "test")), f"{data.source} {split_names(data)['test']}"
    return translator, translator.tokenizer.encode_batch([src for src, _ in pairs]), name


def trained_decode(run: str):
    """The run's translator, zoo's beam search over the test set as a function of the patience
    (0 = the exact stopping rule) and of the weights (the run's model unless given: a quantized
    copy) returning a callable that returns its generated tokens, the sources as pieces, and the
    test set's name."""
    from tasks.translation.task import translate_ids

    translator, sources, name = test_sources(run)
    model, tokenizer = translator.model.eval(), translator.tokenizer

    def zoo(patience: float = 0.0, weights: torch.nn.Module = model):
        decode = replace(translator.trained.cfg.decode, alpha=ALPHA, patience=patience)

        def run() -> int:
            with torch.inference_mode():
                return sum(
                    len(h) + 1
                    for h in translate_ids(weights, sources, decode, beam_size=BEAM, max_tokens=4096)
                )

        return run

    return translator, zoo, [tokenizer.pieces(ids) for ids in sources], name


def trained_contenders(
    decoded: tuple, folder: Path, threads: int, *, int8: bool = False
) -> tuple[dict, dict]:
    """zoo (the exact stopping rule, and patience 1) and CTranslate2 (fp32, int8) with a run's
    weights on its real test sentences (`decoded`: trained_decode's), at `threads`: callables
    that return the tokens they generated, and what they decode. `int8`: zoo's int8 linears
    (zoo.quantize, on a copy) too, as `zoo_int8`."""
    translator, zoo, source_pieces, name = decoded
    model, tokenizer = translator.model, translator.tokenizer
    pieces = tokenizer.pieces(range(tokenizer.vocab_size))
    m = translator.trained.cfg.model
    setup = {
        "test_set": name,
        "sentences": len(source_pieces),
        "step": translator.trained.step,
        "model": f"{m.encoder_layers}+{m.decoder_layers} layers, dim {m.dim}, ffn {m.ffn_dim}, "
        f"{m.num_heads} heads, vocab {tokenizer.vocab_size}, "
        f"{'pre' if m.pre_norm else 'post'}-norm",
    }
    fns = {
        "zoo": zoo(),
        "zoo_patience1": zoo(patience=1.0),
        "ct2_fp32": ct2_beam(ct2_translator(model, pieces, folder, threads, "float32"), source_pieces),
        "ct2_int8": ct2_beam(ct2_translator(model, pieces, folder, threads, "int8"), source_pieces),
    }
    if int8:
        fns["zoo_int8"] = zoo(weights=quantize_int8(copy.deepcopy(model)))
    return fns, setup


def trained(run: str, threads: list[int], repeats: int, folder: Path) -> dict:
    """zoo and CTranslate2 with the run's weights, real early stopping, real test sentences."""
    rows: dict = {}
    decoded = trained_decode(run)  # loaded once for every thread count
    for n in threads:
        torch.set_num_threads(n)
        fns, setup = trained_contenders(decoded, folder, n)
        speed, tokens = timed(fns, repeats)
        rows |= setup
        rows[n] = {
            "tokens_per_s": speed,
            "mean_length": {k: v / setup["sentences"] for k, v in tokens.items()},
        }
    return rows


def profile(preset: Preset, path: Path, run: str = "", *, int8: bool = False) -> None:
    """torch.profiler key averages of zoo's beam search, one thread: on the preset (random
    weights, full length), or on `run`'s test set (real early stopping); `int8`: with the
    model's linears in int8 (zoo.quantize)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiler

    torch.set_num_threads(1)
    if run:
        translator, zoo, _, name = trained_decode(run)
        if int8:
            quantize_int8(translator.model)  # in place: `zoo` decodes with this very model
        decode = zoo()
        what = f"the trained run {run} on {name} (beam {BEAM}, alpha {ALPHA}, real early stopping)"
    else:
        src = random_batch(preset, preset.decode_batch)[0]
        torch.manual_seed(0)
        model = build_ours(preset).eval()
        decode = zoo_beam(quantize_int8(model) if int8 else model, [src])
        what = (
            f"beam {BEAM}, alpha {ALPHA}, source length + {EXTRA_LEN}, random weights (every "
            f"hypothesis runs to the limit)\n# preset {asdict(preset)}"
        )
    decode()
    with profiler(activities=[ProfilerActivity.CPU]) as prof:
        decode()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=40)
    path.write_text(
        f"# Profile of zoo.decode.beam_search, `{command()}`\n# {what}, "
        f"{'int8 linears' if int8 else 'fp32'}, one thread, "
        f"torch {torch.__version__}\n# machine: {cpu_model()}, load average "
        f"{os.getloadavg()[0]:.1f} at the start\n\n{table}\n"
    )


def command() -> str:
    return "python -m bench.translation_speed " + " ".join(sys.argv[1:])


def ratios(speed: dict[str, float]) -> dict[str, dict[str, float]]:
    """Each contender's tokens/s over generate's and over CTranslate2 fp32's."""
    return {
        base: {k: v / speed[base] for k, v in speed.items()}
        for base in ("generate", "ct2_fp32")
        if base in speed
    }


def markdown(r: dict) -> str:
    lines = [
        "# Translation decoding: zoo vs Hugging Face generate vs CTranslate2\n",
        f"`{r['command']}`; torch {r['torch']}, transformers {r['transformers']}, "
        f"ctranslate2 {r['ctranslate2']}. Preset {r['preset']}: {r['config']}.",
        f"Load average at the start: {r['load_average']:.1f}; the ratios come from interleaved "
        f"medians ({r['repeats']} rounds), so load from other processes hits all contenders alike.\n",
        "Targets: zoo >= 2.5x generate and >= 1.0x CTranslate2 fp32 (fp32 beside fp32).\n",
    ]
    for title, rows in (
        ("Random weights, forced full length (beam 4)", r["random"]),
        (f"Trained model {r.get('run', '')}, real early stopping", r.get("trained")),
    ):
        if not rows:
            continue
        lines += [f"## {title}\n"]
        if "test_set" in rows:
            lines += [
                f"{rows['model']}, trained {rows['step']} steps; {rows['sentences']} "
                f"sentences of {rows['test_set']}.\n"
            ]
        lines += [
            "| threads | engine | tokens/s | mean length | vs generate | vs CT2 fp32 |",
            "|---|---|---|---|---|---|",
        ]
        for n, row in rows.items():
            if not isinstance(row, dict):
                continue
            rel = ratios(row["tokens_per_s"])
            for name, speed in row["tokens_per_s"].items():
                vs_gen = f"{rel['generate'][name]:.2f}x" if "generate" in rel else "-"
                lines.append(
                    f"| {n} | {name} | {speed:.0f} | {row['mean_length'][name]:.1f} | "
                    f"{vs_gen} | {rel['ct2_fp32'][name]:.2f}x |"
                )
            if "bf16" in row:
                b = row["bf16"]["tokens_per_s"]
                lines.append(
                    f"| {n} | zoo bf16 autocast (separate interleaving) | {b['zoo_bf16']:.0f} | "
                    f"{row['bf16']['mean_length']['zoo_bf16']:.1f} | "
                    f"{b['zoo_bf16'] / b['zoo']:.2f}x zoo fp32 | - |"
                )
        lines.append("")
    lines += ["## Machine\n", "```", r["lscpu"].rstrip(), "```\n"]
    return "\n".join(lines)


def train_markdown(r: dict) -> str:
    t = r["train"]
    lines = [
        "# Translation training: zoo vs Hugging Face MarianMTModel\n",
        f"`{r['command']}`; torch {r['torch']}, transformers {r['transformers']}. Preset "
        f"{r['preset']}: {r['config']}. Load average at the start: {r['load_average']:.1f}.\n",
        f"Forward + label-smoothed loss + backward + Adam on {t['tokens']} target tokens of random "
        f"ids, as each library trains (zoo: the task's fused projection + loss; Marian: logits, then "
        f"cross-entropy); medians of {r['repeats']} interleaved rounds, one round robin per precision.\n",
        "| threads | precision | zoo tokens/s | Marian tokens/s | ratio (target >= 1.2x) |",
        "|---|---|---|---|---|",
    ]
    for n, row in t["threads"].items():
        for precision, x in row.items():
            lines.append(
                f"| {n} | {precision} | {x['zoo_tokens_per_s']:.0f} | "
                f"{x['marian_tokens_per_s']:.0f} | {x['ratio']:.2f}x |"
            )
    lines += ["", "## Machine\n", "```", r["lscpu"].rstrip(), "```\n"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="small",
        help="model and batch sizes (small fits a laptop CPU; base = the paper's base)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timing rounds")
    parser.add_argument("--threads", default="1,2", help="comma-separated CPU thread counts")
    parser.add_argument("--run", default="", help="also time a trained run (tasks.translation.train)")
    parser.add_argument(
        "--train",
        action="store_true",
        help="time training against Marian instead of decoding (translation_train_speed.*)",
    )
    parser.add_argument(
        "--profile",
        default="",
        help="write a profile of zoo's beam search (on --run if given) to FILE and stop",
    )
    parser.add_argument("--int8", action="store_true", help="--profile: with int8 linears")
    add_out_option(parser)
    args = parser.parse_args()
    preset = PRESETS[args.preset]
    if args.profile:
        profile(preset, Path(args.profile), args.run, int8=args.int8)
        return
    import ctranslate2
    import transformers

    threads = [int(n) for n in args.threads.split(",")]
    result = {
        "command": command(),
        "preset": args.preset,
        "config": asdict(preset),
        "repeats": args.repeats,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "ctranslate2": ctranslate2.__version__,
        "hardware": hardware(),
        "lscpu": cpu(),
        "load_average": os.getloadavg()[0],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    if args.train:
        result["train"] = training(preset, threads, args.repeats)
        (args.out / "translation_train_speed.json").write_text(json.dumps(result, indent=2) + "\n")
        (args.out / "translation_train_speed.md").write_text(train_markdown(result))
        print(train_markdown(result))
        return
    with tempfile.TemporaryDirectory() as tmp:
        result["random"] = random_weights(preset, threads, args.repeats, Path(tmp) / "random")
        if args.run:
            result["run"] = args.run
            result["trained"] = trained(args.run, threads, args.repeats, Path(tmp) / "trained")
    for n, row in result["random"].items():
        rel = ratios(row["tokens_per_s"])
        print(
            f"{n} thread(s), random weights: zoo {rel['generate']['zoo']:.2f}x generate "
            f"(target >= 2.5x), {rel['ct2_fp32']['zoo']:.2f}x CTranslate2 fp32 (target >= 1.0x)"
        )
    (args.out / "translation_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "translation_speed.md").write_text(markdown(result))


if __name__ == "__main__":
    main()
