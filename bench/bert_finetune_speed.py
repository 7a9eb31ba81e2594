"""zoo's fine-tuning heads vs Hugging Face BertForSequenceClassification, BertForTokenClassification
and BertForQuestionAnswering (SDPA attention): the same dimensions and weights, fine-tuning steps
timed in one interleaved run.

    python -m bench.bert_finetune_speed [--device cuda] [--preset minilm|tiny] [--repeats 7] [--threads N]

A step is what each library's fine-tuning loop runs: forward, the head's cross-entropy, backward,
AdamW as each builds it (bench/optimizers.py). zoo's step is the `bert_finetune` task's own
(tasks.bert.finetune.heads: `forward` and `terms`, the loss divided by its units as the runner
does); Hugging Face's is the model called with `labels` (or start and end positions), as `Trainer`
calls it. Batches have the recipes' shapes: 32 SST-2-like sentences of 8-60 pieces (classify),
32 CoNLL-like sentences of 16-80 pieces with a label on ~70% of them, the first pieces (tag), 32
SQuAD windows of 64-256 pieces (span: the `squad` recipes' windows of at most 256 over the dev set
are 148 pieces on average, median 141, 8% full); each batch padded to its longest row, as both
libraries' collators pad. Ratios are zoo / Hugging Face steps per second (issue 29's target:
>= 1.2x), fp32 and bf16 autocast. Writes bench/results/bert_finetune_speed_PRESET.{json,md}.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import torch
import transformers
from torch import Tensor, nn

from bench.optimizers import hf_trainer_optimizer, zoo_optimizer
from bench.tables import RATIO, Column, markdown
from bench.timing import interleaved_medians, peer_arguments, run_meta, synced
from tasks.bert.finetune import heads
from tasks.bert.finetune.config import DistillConfig
from tasks.bert.finetune.data import IGNORE, Batch
from zoo.convert.hf_bert import config_from_hf
from zoo.convert.hf_bert_heads import build_head, head_state_from_hf
from zoo.models.bert import build_bert

COLUMNS = [
    Column("head (HF class)", "head"),
    Column("precision", "precision"),
    Column("zoo ms/step", "zoo_ms", "{:.0f}"),
    Column("HF ms/step", "hf_ms", "{:.0f}"),
    Column("ratio (target >= 1.2x)", "ratio", RATIO),
]
PRESETS = {  # the encoders the recipes fine-tune: all-MiniLM-L6-v2's, and BERT-Tiny's (Turc et al.)
    "minilm": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536),
    "tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512),
}
VOCAB, BATCH = 30522, 32
# zoo head (the recipe's `head`) -> Hugging Face pipeline task, class, and (shortest, longest) row
HEADS = {
    "classify": ("text-classification", transformers.BertForSequenceClassification, (8, 60)),
    "tag": ("token-classification", transformers.BertForTokenClassification, (16, 80)),
    "span": ("question-answering", transformers.BertForQuestionAnswering, (64, 256)),
}
NUM_LABELS = {"classify": 2, "tag": 23, "span": 2}  # SST-2's, CoNLL-2000's B-/I-/O chunk tags


def batch_of(head: str, device: torch.device) -> Batch:
    """Random ids in the head's batch shape (see the module docstring), seeded."""
    g = torch.Generator().manual_seed(0)
    shortest, longest = HEADS[head][2]
    lengths = torch.randint(shortest, longest + 1, (BATCH,), generator=g)
    width = int(lengths.max())
    mask = torch.arange(width)[None] < lengths[:, None]
    ids = torch.randint(1000, VOCAB, (BATCH, width), generator=g).masked_fill(~mask, 0)
    if head == "classify":
        labels = torch.randint(0, 2, (BATCH,), generator=g)
    elif head == "tag":
        first = (torch.rand(BATCH, width, generator=g) < 0.7) & mask
        labels = torch.randint(0, NUM_LABELS[head], (BATCH, width), generator=g).masked_fill(~first, IGNORE)
    else:
        start = torch.randint(20, 60, (BATCH,), generator=g)
        labels = torch.stack([start, start + torch.randint(0, 10, (BATCH,), generator=g)], dim=1)
    types = torch.zeros_like(ids)
    return Batch(ids.to(device), types.to(device), mask.to(device), labels.to(device))


def _zoo_step(head: str, model: nn.Module, b: Batch, optimizer, autocast: bool) -> Callable[[], Tensor]:
    units, plain = heads.units(head, b)["loss"], DistillConfig()  # no teacher: the plain loss

    def step() -> Tensor:
        with torch.autocast(b.input_ids.device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = heads.terms(head, heads.forward(model, b), b, plain)["loss"].loss / units
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return step


def _hf_step(head: str, model: nn.Module, b: Batch, optimizer, autocast: bool) -> Callable[[], Tensor]:
    inputs = dict(
        input_ids=b.input_ids, token_type_ids=b.token_type_ids, attention_mask=b.attention_mask.long()
    )
    if head == "span":
        inputs.update(start_positions=b.labels[:, 0], end_positions=b.labels[:, 1])
    else:
        inputs.update(labels=b.labels)

    def step() -> Tensor:
        with torch.autocast(b.input_ids.device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return step


def models(preset: str, head: str) -> tuple[nn.Module, nn.Module]:
    """(zoo, Hugging Face) head models with equal weights, in training mode."""
    task, hf_class, _ = HEADS[head]
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=VOCAB, num_labels=NUM_LABELS[head], attn_implementation="sdpa", **PRESETS[preset]
    )
    theirs = hf_class(config)
    cfg, vocab_size, pad_id = config_from_hf(theirs.config.to_dict())
    labels = [str(i) for i in range(NUM_LABELS[head])]
    ours = build_head(task, build_bert(cfg, vocab_size, pad_id), labels)
    ours.load_state_dict(head_state_from_hf(theirs.state_dict(), task))
    return ours.train(), theirs.train()


def contenders(preset: str, device: torch.device) -> dict[str, Callable[[], Tensor]]:
    """The timed steps, named HEAD/PRECISION/LIBRARY; each returns its loss."""
    fns = {}
    for head in HEADS:
        ours, theirs = (m.to(device) for m in models(preset, head))
        b = batch_of(head, device)
        for precision in ("fp32", "bf16"):
            for library, model, make in (("zoo", ours, _zoo_step), ("hf", theirs, _hf_step)):
                optimizer = (
                    hf_trainer_optimizer(model, 1e-5)
                    if library == "hf"
                    else zoo_optimizer(model, "adamw", 1e-5, weight_decay=0.01)
                )
                fn = make(head, model, b, optimizer, precision == "bf16")
                fns[f"{head}/{precision}/{library}"] = synced(fn, device)
    return fns


def run(preset: str, device: torch.device, repeats: int) -> list[dict]:
    fns = contenders(preset, device)
    rows = []
    for head in HEADS:  # one round robin per head and precision: zoo and Hugging Face alternate
        for precision in ("fp32", "bf16"):
            pair = {k: f for k, f in fns.items() if k.startswith(f"{head}/{precision}/")}
            times = interleaved_medians(pair, repeats=repeats, warmup=2)
            zoo, hf = times[f"{head}/{precision}/zoo"], times[f"{head}/{precision}/hf"]
            hf_class = HEADS[head][1].__name__
            rows.append(dict(head=f"{head} ({hf_class})", precision=precision, zoo_ms=1e3 * zoo,
                             hf_ms=1e3 * hf, ratio=hf / zoo))  # fmt: skip
    return rows


def main() -> None:
    args = peer_arguments(__doc__, PRESETS, "minilm")
    rows = run(args.preset, torch.device(args.device), args.repeats)
    setup = {"preset": args.preset, **PRESETS[args.preset], "vocab_size": VOCAB, "batch": BATCH}
    meta = run_meta("bench.bert_finetune_speed", "transformers", transformers.__version__, setup)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"bert_finetune_speed_{args.preset}"
    stem.with_suffix(".json").write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "# zoo's BERT fine-tuning heads vs Hugging Face BertFor* (same dimensions and weights)",
        "",
        f"`{meta['command']}` on {meta['hardware']}, torch {meta['torch']}, "
        f"transformers {meta['transformers']}.",
        f"Setup: {setup}. Fine-tuning steps (forward, the head's cross-entropy, backward, AdamW); "
        f"medians of {args.repeats} interleaved rounds per head and precision.",
        "",
        *markdown(rows, COLUMNS),
    ]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
