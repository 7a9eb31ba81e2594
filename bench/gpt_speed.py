"""GPT on CPU, fp32: zoo against Hugging Face's GPT2LMHeadModel (the same config and weights,
zoo.convert.hf_gpt2.hf_model_of) and CTranslate2's Generator (zoo's weights,
write_ctranslate2_gpt), the contenders taking turns in one run (bench/timing.py).

    python -m bench.gpt_speed [--preset micro|mini|gpt2_small] [--threads 1 2] [--repeats 5]
        [--quick] [--out bench/results]

- Training: tokens/s of a step as each library's users run it: zoo's forward with targets (the
  output projection and the loss fused), Hugging Face's forward with `labels=` (logits, then its
  loss); backward; AdamW (bench/optimizers.py: both torch's fused kernel, the same settings).
  Both predict the same B x (T - 1) targets; the first losses are checked equal. Target >= 1.2x.
- Generation with the KV cache, greedy, at batch 1 and 8 (prompts of 64 random ids, 128 new
  ids, none allowed to end early: min_new_tokens / min_length 128): zoo `generate` (and, as
  `zoo_compiled`, on its static cache with the one-token step under torch.compile; as
  `zoo_row_major`, without the column-major weights it takes for one row), Hugging
  Face `generate` and CTranslate2 `generate_batch` (fp32, sampling_topk=1). Prefill and decode
  are reported apart, as optimum-benchmark does: prefill = the same call for one new id (the
  prompts' forward, first token), decode = the full call minus it, over the other 127 ids per
  row. zoo's ids must equal Hugging Face's (asserted); CTranslate2's agreement is reported.
  Targets: zoo decode >= 2x Hugging Face and >= 1.0x CTranslate2 fp32.

The weights are GPT-2's initialisation plus noise for generation (as the parity tests), so that
greedy choices are far from ties and the engines' outputs can be compared; speed does not depend
on them. `--quick` shrinks everything (prompts 16, 16 new ids, training 2 x 64, one round) to
check the bench, not to measure. Writes gpt_speed.{json,md} and gpt_decode_profile.txt
(torch.profiler key averages of zoo's generate, at the first thread count) into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from unittest.mock import patch

import torch

from bench.ct2_process import Remote
from bench.optimizers import hf_trainer_optimizer, zoo_optimizer
from bench.output import add_out_option
from bench.tables import RATE, RATIO, Column
from bench.tables import markdown as table
from bench.timing import cpu, cpu_model, interleaved_medians, run_meta
from zoo.blocks.linear import linear, split_parts, split_product
from zoo.convert.hf_gpt2 import hf_model_of
from zoo.decode import GenerationConfig, generate, lm_state
from zoo.models.gpt import GPT, GPTModelConfig, build_gpt
from zoo.models.gpt import PRESETS as MODELS


@dataclass(frozen=True)
class Preset:
    vocab: int
    train_batch: int  # rows of train_context tokens
    train_context: int
    prompt: int = 64
    new: int = 128


PRESETS = {  # model sizes of zoo.models.gpt.PRESETS; GPT-2 small trains on one full context a step
    "micro": Preset(vocab=8192, train_batch=16, train_context=256),
    "mini": Preset(vocab=16384, train_batch=16, train_context=256),
    "gpt2_small": Preset(vocab=50257, train_batch=1, train_context=1024),
}
QUICK = dict(train_batch=2, train_context=64, prompt=16, new=16)
BATCHES = (1, 8)
MIN_AGREEMENT = 0.5  # of greedy ids equal to Hugging Face's (see generation)
# The GPT recipes' optimizer (configs/gpt), weight decay left at the Trainer's default (0) in both.
ADAMW = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8)


def models(name: str, vocab: int, *, noise: float = 0.0) -> tuple[GPT, torch.nn.Module]:
    """zoo's GPT (no dropout, as the recipes) and Hugging Face's GPT2LMHeadModel with its weights,
    both in eval mode; `noise` is added to every zoo weight first."""
    torch.manual_seed(0)
    model = build_gpt(GPTModelConfig(preset=name, dropout=0.0, attn_dropout=0.0), vocab)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * noise)
    return model.eval(), hf_model_of(model)


def training_contenders(name: str, p: Preset) -> tuple[dict[str, Callable[[], torch.Tensor]], int]:
    """zoo's and Hugging Face's training steps on one batch of random ids, their first losses
    checked equal (that step is also the warmup), and the tokens a step trains on."""
    zoo, hf = (m.train() for m in models(name, p.vocab))
    ids = torch.randint(
        0, p.vocab, (p.train_batch, p.train_context + 1), generator=torch.Generator().manual_seed(0)
    )
    inputs, targets = ids[:, :-1], ids[:, 1:].clone()
    targets[:, -1] = -100  # Hugging Face's shifted labels have no target at the last position

    def zoo_loss() -> torch.Tensor:
        sums = zoo(inputs, targets)
        return sums.loss / sums.units

    steps = {
        "zoo": (zoo_loss, zoo_optimizer(zoo, "adamw", ADAMW["lr"], betas=ADAMW["betas"], eps=ADAMW["eps"])),
        "hf": (lambda: hf(input_ids=inputs, labels=inputs).loss, hf_trainer_optimizer(hf, **ADAMW)),
    }
    fns = {library: trainer(loss, optimizer) for library, (loss, optimizer) in steps.items()}
    losses = {library: step() for library, step in fns.items()}
    torch.testing.assert_close(losses["zoo"], losses["hf"], rtol=1e-4, atol=1e-4)
    return fns, inputs.numel()


def training(name: str, p: Preset, threads: list[int], repeats: int) -> list[dict]:
    """Training tokens/s of zoo and Hugging Face at each thread count, interleaved."""
    fns, tokens = training_contenders(name, p)
    rows = []
    for n in threads:
        torch.set_num_threads(n)
        seconds = interleaved_medians(fns, repeats=repeats)
        rows.append(
            {
                "threads": n,
                "tokens": tokens,
                "zoo_tokens_per_s": tokens / seconds["zoo"],
                "hf_tokens_per_s": tokens / seconds["hf"],
                "ratio": seconds["hf"] / seconds["zoo"],
            }
        )
    return rows


def trainer(
    loss_of: Callable[[], torch.Tensor], optimizer: torch.optim.Optimizer
) -> Callable[[], torch.Tensor]:
    def step() -> torch.Tensor:
        loss = loss_of()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return step


def engines(zoo: GPT, hf: torch.nn.Module, ct2, prompts: list[list[int]]) -> dict:
    """Each engine's greedy continuation of `prompts` as a function of the number of new ids
    (every row gets exactly that many: end-of-text is forbidden until then)."""
    eot = zoo.vocab_size - 1
    tokens = torch.tensor(prompts)
    strings = [[f"t{i}" for i in prompt] for prompt in prompts]

    def zoo_generate(new: int, **cache) -> list[list[int]]:
        config = GenerationConfig(max_new_tokens=new, min_new_tokens=new, eos_id=eot, **cache)
        return generate(zoo, prompts, config)

    def hf_generate(new: int) -> list[list[int]]:
        with torch.inference_mode():
            out = hf.generate(
                tokens,
                attention_mask=torch.ones_like(tokens),
                do_sample=False,
                max_new_tokens=new,
                min_new_tokens=new,
                pad_token_id=eot,
            )
        return out[:, tokens.shape[1] :].tolist()

    def ct2_generate(new: int) -> list[list[int]]:
        results = ct2.generate_batch(
            strings, max_length=new, min_length=new, sampling_topk=1, include_prompt_in_result=False
        )
        return [r.sequences_ids[0] for r in results]

    def zoo_row_major(new: int) -> list[list[int]]:
        """zoo's generate with nn.Linear's row-major products for one row too: the share of
        zoo.blocks.linear.single_row_weights in the figures."""
        with patch.object(lm_state, "single_row_weights", lambda model: nullcontext()):
            return zoo_generate(new)

    # The static cache's one-token step under torch.compile (inductor's C++ kernels on the CPU):
    # the first call compiles (tens of seconds), later calls with the batch size reuse the graph.
    compiled = partial(zoo_generate, cache_implementation="static", compile=True)
    return {
        "zoo": zoo_generate,
        "zoo_row_major": zoo_row_major,
        "zoo_compiled": compiled,
        "hf": hf_generate,
        "ct2_fp32": ct2_generate,
    }


def step_products(zoo: GPT, rows: int) -> dict[str, Callable[[], torch.Tensor]]:
    """A decoding step's products alone, each weight once in the order a step reads them (so
    that, as in decoding, a weight comes back to the cache only a step later), for `rows` rows:
    over zoo's weights stored column-major, split into one batched call (for one row: the two
    ways of zoo.blocks.linear.single_row_weights, which `generate` applies to one row), and
    row-major (nn.Linear's layout, the peer). A call returns its last product, the logits."""
    weights = [m.weight.detach() for m in zoo.modules() if isinstance(m, torch.nn.Linear)]
    weights.append(zoo.output_weight.detach())
    inputs = {w.shape[1]: torch.randn(rows, w.shape[1]) for w in weights}

    def run(layout: list[torch.Tensor], product=linear) -> Callable[[], torch.Tensor]:
        def step() -> torch.Tensor:
            for weight in layout:  # each product freed as the next is made, as in a step
                out = product(inputs[weight.shape[1]], weight)
            return out

        return step

    def split(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return split_product(x, weight) if split_parts(weight.shape[0]) else linear(x, weight)

    column_major = [w.t().contiguous().t() for w in weights]
    products = {"zoo_column_major": run(column_major), "row_major": run(weights)}
    return products if rows > 1 else {**products, "zoo_split": run(weights, split)}


def ct2_generator(zoo: GPT, folder: Path, threads: int, compute_type: str = "float32") -> Remote:
    """CTranslate2's Generator running `zoo`'s own weights (converted once into `folder`) at
    `compute_type`, in a process of its own (bench.ct2_process)."""
    from zoo.convert.ctranslate2 import write_ctranslate2_gpt

    vocab = zoo.vocab_size
    if not (folder / "model.bin").exists():
        write_ctranslate2_gpt(zoo, [f"t{i}" for i in range(vocab)], folder, eot_id=vocab - 1)
    return Remote("Generator", str(folder), device="cpu", compute_type=compute_type, intra_threads=threads)


def generation(name: str, p: Preset, threads: list[int], repeats: int, folder: Path) -> list[dict]:
    """Prefill and decode tokens/s of the three engines at each thread count and batch size."""
    zoo, hf = models(name, p.vocab, noise=0.3)
    rows = []
    for n in threads:
        torch.set_num_threads(n)
        ct2 = ct2_generator(zoo, folder, n)
        for batch in BATCHES:
            runs = engines(zoo, hf, ct2, random_prompts(p, batch))
            outputs = {engine: run(p.new) for engine, run in runs.items()}  # also the warmup
            # Every engine decodes to the full length, so differing ids change no work; they are
            # reported ("ids as zoo"). Random weights put near ties among GPT-2's 50,257 logits
            # (HF's top two 37.1614 and 37.1509 at GPT-2 small's 79th id, batch 1), where sums in
            # another order may choose the other: a broken engine differs from the first ids on.
            for engine in ("zoo", "zoo_row_major", "zoo_compiled"):
                share = agreement(outputs[engine], outputs["hf"])
                assert share >= MIN_AGREEMENT, f"{engine}: greedy ids {share:.0%} equal to HF's"
            calls = [(f"{engine}/{new}", run, new) for engine, run in runs.items() for new in (1, p.new)]
            fns = {name: partial(run, new) for name, run, new in calls}
            # Each timed call right after an untimed one-id call of the same engine: its threads
            # awake, whichever library ran before it.
            primers = {name: partial(run, 1) for name, run, _ in calls}
            seconds = interleaved_medians(fns, repeats=repeats, warmup=0, primers=primers)
            rows += [{"threads": n, **row} for row in rates(seconds, outputs, batch, p)]
    return rows


def rates(seconds: dict[str, float], outputs: dict[str, list], batch: int, p: Preset) -> list[dict]:
    """Each engine's prefill, decode and end-to-end tokens/s from the seconds of its one-id
    (`ENGINE/1`) and full calls, its decode speed over Hugging Face's and CTranslate2's, and the
    share of its ids equal to zoo's."""
    prefill = {engine: seconds[f"{engine}/1"] for engine in outputs}
    total = {engine: seconds[f"{engine}/{p.new}"] for engine in outputs}
    decode = {engine: batch * (p.new - 1) / (total[engine] - prefill[engine]) for engine in outputs}
    return [
        {
            "batch": batch,
            "engine": engine,
            "prefill_tokens_per_s": batch * p.prompt / prefill[engine],
            "decode_tokens_per_s": decode[engine],
            "total_tokens_per_s": batch * p.new / total[engine],
            "decode_vs_hf": decode[engine] / decode["hf"],
            "decode_vs_ct2": decode[engine] / decode["ct2_fp32"],
            "same_ids_as_zoo": agreement(ids, outputs["zoo"]),
        }
        for engine, ids in outputs.items()
    ]


def random_prompts(p: Preset, batch: int) -> list[list[int]]:
    """`batch` prompts of p.prompt ids, never end-of-text (the last id)."""
    g = torch.Generator().manual_seed(batch)
    return torch.randint(0, p.vocab - 1, (batch, p.prompt), generator=g).tolist()


def agreement(ids: list[list[int]], reference: list[list[int]]) -> float:
    """The fraction of positions where two engines chose the same id."""
    pairs = [(a, b) for row, ref in zip(ids, reference) for a, b in zip(row, ref, strict=True)]
    return sum(a == b for a, b in pairs) / len(pairs)


def profile(name: str, p: Preset, threads: int, path: Path, command: str) -> None:
    """torch.profiler key averages of zoo's generate (its prefill, then the decode loop) at each
    batch size, as timed."""
    torch.set_num_threads(threads)
    zoo, _ = models(name, p.vocab, noise=0.3)
    header = (
        f"# Profile of zoo.decode.generate (greedy, KV cache), `{command}`\n# preset {name}, "
        f"prompts of {p.prompt} ids, {p.new} new ids each, {threads} thread(s), torch "
        f"{torch.__version__}\n# machine: {cpu_model()}, load average {os.getloadavg()[0]:.1f} at the start\n"
    )
    path.write_text(header + "\n" + generate_profile(zoo, p))


def generate_profile(model: torch.nn.Module, p: Preset, row_limit: int = 25) -> str:
    """torch.profiler key averages of `model`'s generate at each batch size, one section each."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiler

    config = GenerationConfig(max_new_tokens=p.new, min_new_tokens=p.new, eos_id=p.vocab - 1)
    parts = []
    for batch in BATCHES:
        prompts = random_prompts(p, batch)
        generate(model, prompts, config)
        with profiler(activities=[ProfilerActivity.CPU]) as prof:
            generate(model, prompts, config)
        averages = prof.key_averages().table(
            sort_by="self_cpu_time_total", row_limit=row_limit, max_name_column_width=40
        )
        parts.append(f"## batch {batch}\n\n{averages}\n")
    return "\n".join(parts)


TRAIN_COLUMNS = (
    Column("threads", "threads"),
    Column("tokens a step", "tokens"),
    Column("zoo tokens/s", "zoo_tokens_per_s", RATE),
    Column("HF tokens/s", "hf_tokens_per_s", RATE),
    Column("ratio (target >= 1.2x)", "ratio", RATIO),
)
GENERATE_COLUMNS = (
    Column("threads", "threads"),
    Column("batch", "batch"),
    Column("engine", "engine"),
    Column("prefill tokens/s", "prefill_tokens_per_s", RATE),
    Column("decode tokens/s", "decode_tokens_per_s", RATE),
    Column("end-to-end new tokens/s", "total_tokens_per_s", RATE),
    Column("decode vs HF (target >= 2x)", "decode_vs_hf", RATIO),
    Column("decode vs CT2 fp32 (target >= 1x)", "decode_vs_ct2", RATIO),
    Column("ids as zoo", "same_ids_as_zoo", "{:.0%}"),
)


def markdown(r: dict) -> str:
    s = r["setup"]
    return "\n".join(
        [
            "# GPT on CPU, fp32: zoo vs Hugging Face GPT2LMHeadModel vs CTranslate2\n",
            f"`{r['command']}` on {r['cpu']} (load average {r['load_average']:.1f} at the start); torch "
            f"{r['torch']}, transformers {r['transformers']}, ctranslate2 {r['ctranslate2']}. Preset "
            f"{s['preset']} ({s['model']}, vocabulary {s['vocab']}), random weights; medians of "
            f"{s['repeats']} interleaved rounds.\n",
            f"## Training: {s['train_batch']} x {s['train_context']} tokens, forward + loss + backward + "
            "AdamW\n",
            *table(r["train"], TRAIN_COLUMNS),
            f"\n## Greedy generation: prompts of {s['prompt']} ids, {s['new']} new ids, KV cache\n",
            "Prefill = the call for one new id; decode = the full call minus it.\n",
            *table(r["generate"], GENERATE_COLUMNS),
            "\nProfile of zoo's generate: gpt_decode_profile.txt.\n",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default="mini", help="model size (zoo's GPT presets)"
    )
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="CPU thread counts")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timing rounds")
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes and one round: checks the bench only"
    )
    add_out_option(parser)
    args = parser.parse_args()
    import ctranslate2
    import transformers

    p = replace(PRESETS[args.preset], **QUICK) if args.quick else PRESETS[args.preset]
    repeats = 1 if args.quick else args.repeats
    setup = {"preset": args.preset, "model": MODELS[args.preset], **asdict(p), "repeats": repeats}
    result = {
        **run_meta("bench.gpt_speed", "transformers", transformers.__version__, setup),
        "ctranslate2": ctranslate2.__version__,
        "cpu": cpu_model(),
        "threads": args.threads,
        "load_average": os.getloadavg()[0],
        "lscpu": cpu(),
    }
    result["train"] = training(args.preset, p, args.threads, repeats)
    with tempfile.TemporaryDirectory() as tmp:
        result["generate"] = generation(args.preset, p, args.threads, repeats, Path(tmp) / "ct2")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpt_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "gpt_speed.md").write_text(markdown(result))
    profile(args.preset, p, args.threads[0], args.out / "gpt_decode_profile.txt", result["command"])
    print(markdown(result))


if __name__ == "__main__":
    main()
