"""zoo BERT vs Hugging Face BertForPreTraining (SDPA attention): the same dimensions and
weights, pretraining steps timed in one interleaved run.

    python -m bench.bert_speed [--device cuda] [--preset tiny|mini|base] [--repeats 7] [--threads N]

A step is what each library's users run: forward with both heads, MLM + NSP cross-entropy,
backward, AdamW as each library's training loop builds it (bench/optimizers.py: both take
torch's fused kernel). Hugging Face computes the MLM logits at every position (`labels` = -100
where not masked); zoo computes them only at the masked ones (and, as an ablation, everywhere).
Batches look like pretraining batches: 128-token pairs, 10% of them shorter (padded), 15% of the
tokens masked. Tokens/s count real
tokens; ratios are zoo / Hugging Face (target >= 1.2x), fp32 and bf16 autocast.
Writes bench/results/bert_speed_PRESET.{json,md}.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForPreTraining

from bench.optimizers import hf_trainer_optimizer, zoo_optimizer
from bench.output import publish
from bench.tables import SHIM_TABLES
from bench.timing import interleaved_medians, peer_arguments, run_meta, synced
from zoo.convert.hf_bert import config_from_hf, state_from_hf
from zoo.models.bert import build_bert, fixed_width_positions

PRESETS = {  # Turc et al. (2019)'s BERT-Tiny and BERT-Mini, and BERT-base
    "tiny": dict(
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=512,
        vocab_size=8192,
        batch=32,
    ),
    "mini": dict(
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=1024,
        vocab_size=16384,
        batch=32,
    ),
    "base": dict(
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        vocab_size=30522,
        batch=32,
    ),
}
LENGTH = 128


def pretraining_batch(
    vocab_size: int, batch: int, device: torch.device, length: int = LENGTH
) -> dict[str, torch.Tensor]:
    """Random ids with the shape statistics of BERT's pretraining batches, and the masked
    positions also as the original's fixed-width `masked_lm_positions` (`positions`, padded with
    0, their labels -100 in `position_labels`)."""
    g = torch.Generator().manual_seed(0)
    lengths = torch.where(
        torch.rand(batch, generator=g) < 0.1,
        torch.randint(8, length, (batch,), generator=g),
        torch.full((batch,), length),
    )
    mask = torch.arange(length)[None] < lengths[:, None]
    ids = torch.randint(5, vocab_size, (batch, length), generator=g).masked_fill(~mask, 0)
    types = ((torch.arange(length)[None] >= lengths[:, None] // 2) & mask).long()
    chosen = (torch.rand(batch, length, generator=g) < 0.15) & mask
    labels = ids.masked_fill(~chosen, -100)
    nsp = torch.randint(0, 2, (batch,), generator=g)
    fixed = fixed_width_positions(chosen, int(chosen.sum(1).max()))
    tensors = dict(
        ids=ids,
        types=types,
        mask=mask,
        labels=labels,
        nsp=nsp,
        positions=fixed.index,
        position_labels=labels.gather(1, fixed.index).masked_fill(~fixed.taken, -100),
    )
    return {k: v.to(device) for k, v in tensors.items()}


def _zoo_step(
    model, b, optimizer, autocast: bool, *, every_position: bool = False, static_positions: bool = False
) -> Callable[[], None]:
    """zoo's step; `every_position` runs the MLM head everywhere as Hugging Face does (the
    ablation that shows where the difference comes from); `static_positions` reads the masked
    positions as fixed-width indices (what a compiled step takes: no data-dependent shape)."""
    if every_position:
        chosen, targets = None, b["labels"].flatten()
    elif static_positions:
        chosen, targets = b["positions"], b["position_labels"].flatten()
    else:
        chosen = b["labels"] != -100
        targets = b["labels"][chosen]

    def step() -> None:
        with torch.autocast(b["ids"].device.type, dtype=torch.bfloat16, enabled=autocast):
            out = model(b["ids"], b["types"], b["mask"], masked_positions=chosen)
            mlm = out.mlm.float().flatten(0, -2)
            loss = F.cross_entropy(mlm, targets, ignore_index=-100) + F.cross_entropy(
                out.nsp.float(), b["nsp"]
            )
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def _hf_step(model, b, optimizer, autocast: bool) -> Callable[[], None]:
    def step() -> None:
        with torch.autocast(b["ids"].device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = model(
                input_ids=b["ids"],
                token_type_ids=b["types"],
                attention_mask=b["mask"].long(),
                labels=b["labels"],
                next_sentence_label=b["nsp"],
            ).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def contenders(
    preset: str,
    device: torch.device,
    compiled: bool = False,
    *,
    batch: int | None = None,
    length: int = LENGTH,
    compile_peer: bool = True,
    precisions: tuple[str, ...] = ("fp32", "bf16"),
) -> tuple[dict[str, Callable[[], None]], dict]:
    """The timed steps, named MODE/PRECISION/LIBRARY as in every peer bench (each synchronises a
    GPU), and the setup; `compiled` adds zoo (and, with `compile_peer`, Hugging Face) under
    torch.compile (mode train+compile): zoo's compiled step takes the masked positions as
    fixed-width indices, as the original BERT's input pipeline gives them."""
    spec = dict(PRESETS[preset])
    default_batch = spec.pop("batch")
    batch = batch or default_batch
    torch.manual_seed(0)
    theirs = BertForPreTraining(BertConfig(max_position_embeddings=512, attn_implementation="sdpa", **spec))
    cfg, vocab_size, pad_id = config_from_hf(theirs.config.to_dict())
    ours = build_bert(cfg, vocab_size, pad_id)
    ours.load_state_dict(state_from_hf(theirs.state_dict()))
    b = pretraining_batch(vocab_size, batch, device, length)
    every = partial(_zoo_step, every_position=True)
    steps = {
        "train/zoo": (ours.to(device), _zoo_step),
        "train/hf": (theirs.to(device), _hf_step),
        "train/zoo_every_position": (ours, every),
    }
    if compiled:
        steps["train+compile/zoo"] = (torch.compile(ours), partial(_zoo_step, static_positions=True))
        if compile_peer:
            steps["train+compile/hf"] = (torch.compile(theirs), _hf_step)
    fns = {}
    for precision in precisions:
        for name, (model, make) in steps.items():
            mode, library = name.split("/")
            model.train()
            optimizer = (
                hf_trainer_optimizer(model, 1e-5)
                if library == "hf"
                else zoo_optimizer(model, "adamw", 1e-5, weight_decay=0.01)
            )
            fns[f"{mode}/{precision}/{library}"] = synced(
                make(model, b, optimizer, precision == "bf16"), device
            )
    params = sum(p.numel() for p in ours.parameters())
    return fns, {
        "preset": preset,
        **spec,
        "batch": batch,
        "length": length,
        "tokens": int(b["mask"].sum()),
        "parameters": params,
    }


def run(preset: str, device: torch.device, repeats: int) -> tuple[list[dict], dict]:
    fns, setup = contenders(preset, device)
    times = {}
    for precision in ("fp32", "bf16"):  # one round robin per precision, as the other benches
        times.update(
            interleaved_medians(
                {k: f for k, f in fns.items() if f"/{precision}/" in k}, repeats=repeats, warmup=2
            )
        )
    tokens = setup["tokens"]
    rows = [
        {
            "precision": p,
            "zoo_tokens_per_s": tokens / times[f"train/{p}/zoo"],
            "hf_tokens_per_s": tokens / times[f"train/{p}/hf"],
            "ratio": times[f"train/{p}/hf"] / times[f"train/{p}/zoo"],
            "zoo_every_position_tokens_per_s": tokens / times[f"train/{p}/zoo_every_position"],
        }
        for p in ("fp32", "bf16")
    ]
    return rows, setup


def main() -> None:
    args = peer_arguments(__doc__, PRESETS, "mini")
    import transformers

    rows, setup = run(args.preset, torch.device(args.device), args.repeats)
    record = {**run_meta("bench.bert_speed", "transformers", transformers.__version__, setup), "rows": rows}
    name = f"bert_speed_{args.preset}"
    publish(record, args.out, name, page(record, args.repeats, f"{name}.json"))


def page(record: dict, repeats: int, name: str) -> list[str]:
    """bert_speed_PRESET.md: the run, then its table as the docs show it (bench.tables)."""
    return [
        "# zoo BERT vs Hugging Face BertForPreTraining (same dimensions and weights)",
        "",
        f"`{record['command']}` on {record['hardware']}, torch {record['torch']}, "
        f"transformers {record['transformers']}.",
        f"Setup: {record['setup']}. Pretraining steps (forward, MLM + NSP loss, backward, AdamW); "
        f"medians of {repeats} interleaved rounds, one round robin per precision.",
        "",
        *SHIM_TABLES["bert_speed"].render_file(record, name),
    ]


if __name__ == "__main__":
    main()
