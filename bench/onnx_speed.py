"""zoo in eager PyTorch against ONNX Runtime running zoo's own exported graphs (zoo.convert.onnx),
the same weights, timed in one interleaved run.

    python -m bench.onnx_speed [--threads 1] [--repeats 5] [--out bench/results]

- translation: greedy decoding of a batch of random sources with a small random Transformer
  (zoo.decode.greedy_search over the model, and over OnnxSeq2Seq: the encoder graph once, then
  the decoder step per token). Random weights rarely end early, so both decode to the length
  limit (source length + 50); the ids are checked equal. Sentences/s.
- bert: the encoder's forward (hidden states and pooled state) of a BERT-Mini-sized model on
  128-token batches, 10% of the rows shorter (padded). Real tokens/s.
- vit and gpt (under pytest-benchmark only, bench/test_onnx_speed.py): the ViT `small` preset's
  forward on a batch of 64 images (images/s), and the GPT `micro` preset's forward of 8 prompts of
  64 ids with no past (the prefill of generation; tokens/s).

Both libraries get `--threads` intra-op threads. Ratios are ONNX Runtime / zoo.
Writes OUT/onnx_speed.{json,md} (OUT: runs/bench unless --out says bench/results).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import onnxruntime
import torch

from bench.bert_speed import pretraining_batch
from bench.gpt_speed import PRESETS as GPT_PRESETS
from bench.gpt_speed import models as gpt_models
from bench.gpt_speed import random_prompts
from bench.output import add_out_option
from bench.timing import cpu_model, interleaved_medians, run_meta
from bench.translation_speed import PRESETS, build_ours, random_batch
from bench.vit_speed import PRESETS as VIT_PRESETS
from zoo.convert.onnx.export import (
    MODEL,
    export_bert,
    export_gpt,
    export_translation,
    export_vit,
    layer_names,
)
from zoo.convert.onnx.graphs import GPTStep
from zoo.convert.onnx.runtime import OnnxSeq2Seq, session
from zoo.data.special import SPECIAL_IDS
from zoo.decode import greedy_search
from zoo.models.bert import Bert
from zoo.models.vit import ViT

TRANSLATION = PRESETS["small"]  # 3 + 3 layers, D 256, 8,000 tokens; 32 sources of 30 tokens
EXTRA_LEN = 50
BERT_MINI = dict(vocab_size=16384, dim=256, num_layers=4, num_heads=4, ffn_dim=1024)
BERT_BATCH = 32
VIT, GPT, GPT_BATCH = "small", "micro", 8


def translation_contenders(directory: Path, threads: int) -> tuple[dict, int, bool]:
    """zoo's and ONNX Runtime's greedy decoding of one batch, the sentences decoded, and whether
    their ids are equal."""
    torch.manual_seed(0)
    model = build_ours(TRANSLATION).eval()
    export_translation(model, directory)
    onnx_model = OnnxSeq2Seq.load(directory, threads=threads)
    src = random_batch(TRANSLATION, TRANSLATION.decode_batch)[0]
    limits = dict(special=SPECIAL_IDS, max_len_a=1.0, max_len_b=EXTRA_LEN)
    same = greedy_search(model, src, **limits).best() == greedy_search(onnx_model, src, **limits).best()
    fns = {
        "zoo": lambda: greedy_search(model, src, **limits),
        "onnxruntime": lambda: greedy_search(onnx_model, src, **limits),
    }
    return fns, src.shape[0], same


def bert_contenders(directory: Path, threads: int) -> tuple[dict, int]:
    """zoo's and ONNX Runtime's BERT forward of one batch, and the real tokens in it."""
    torch.manual_seed(0)
    model = Bert(**BERT_MINI, dropout=0.0, attn_dropout=0.0).eval()
    export_bert(model, directory)
    graph = session(directory / MODEL, threads=threads)
    b = pretraining_batch(BERT_MINI["vocab_size"], BERT_BATCH, torch.device("cpu"))
    feeds = {
        "input_ids": b["ids"].numpy(),
        "token_type_ids": b["types"].numpy(),
        "attention_mask": b["mask"].numpy(),
    }

    @torch.inference_mode()
    def zoo() -> None:
        model.pool(model.encode(b["ids"], b["types"], b["mask"]))

    return {"zoo": zoo, "onnxruntime": lambda: graph.run(None, feeds)}, int(b["mask"].sum())


def vit_contenders(directory: Path, threads: int) -> tuple[dict, int]:
    """zoo's and ONNX Runtime's ViT forward (images -> logits) of one batch, and its images."""
    spec = dict(VIT_PRESETS[VIT])
    batch = spec.pop("batch")
    torch.manual_seed(0)
    model = ViT(
        image_size=spec["img_size"], patch_size=spec["patch_size"], in_chans=3, num_classes=10,
        dim=spec["embed_dim"],
        encoder_layers=spec["depth"], num_heads=spec["num_heads"], ffn_dim=4 * spec["embed_dim"],
    ).eval()  # fmt: skip
    export_vit(model, directory)
    graph = session(directory / MODEL, threads=threads)
    images = torch.rand(batch, 3, spec["img_size"], spec["img_size"])

    @torch.inference_mode()
    def zoo() -> None:
        model(images)

    return {"zoo": zoo, "onnxruntime": lambda: graph.run(None, {"images": images.numpy()})}, batch


def gpt_contenders(directory: Path, threads: int) -> tuple[dict, int]:
    """zoo's and ONNX Runtime's GPT forward of GPT_BATCH prompts with no past (logits and the
    present keys/values: the exported module, run eagerly by zoo), and the prompt tokens."""
    model = gpt_models(GPT, GPT_PRESETS[GPT].vocab)[0]
    export_gpt(model, directory)
    graph = session(directory / MODEL, threads=threads)
    ids = torch.tensor(random_prompts(GPT_PRESETS[GPT], GPT_BATCH))
    attn = model.blocks.layers[0].self_attn
    empty = torch.zeros(GPT_BATCH, attn.num_heads, 0, attn.head_dim)
    feeds = {"ids": ids.numpy(), **dict.fromkeys(layer_names("past", model.num_layers), empty.numpy())}
    step, past = GPTStep(model), [(empty, empty)] * model.num_layers

    @torch.inference_mode()
    def zoo() -> None:
        step(ids, past)

    return {"zoo": zoo, "onnxruntime": lambda: graph.run(None, feeds)}, ids.numel()


def write(results: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "onnx_speed.json").write_text(json.dumps(results, indent=2) + "\n")
    rows = [
        f"| {name} | {row['unit']} | {row['zoo']:.1f} | {row['onnxruntime']:.1f} | {row['ratio']:.2f}x |"
        for name, row in results["rows"].items()
    ]
    (out / "onnx_speed.md").write_text(
        "# zoo eager PyTorch vs ONNX Runtime on zoo's exported graphs (fp32, CPU)\n\n"
        f"`{results['command']}` on {results['cpu']}, torch {results['torch']}, onnxruntime "
        f"{results['onnxruntime']}. Medians of {results['setup']['repeats']} interleaved rounds. The machine "
        "was shared with training runs on its 2 cores: the ratio is the figure to read, not the absolute "
        "speeds.\n\n"
        f"Setup: {results['setup']}. Greedy ids equal: {results['same_ids']}.\n\n"
        "| workload | unit | zoo | ONNX Runtime | ratio (ORT / zoo) |\n|---|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads of both libraries")
    parser.add_argument("--repeats", type=int, default=5)
    add_out_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        fns, sentences, same = translation_contenders(Path(tmp) / "translation", args.threads)
        seconds = interleaved_medians(fns, repeats=args.repeats)
        rows["translation greedy decoding"] = {"unit": "sentences/s", **_rates(seconds, sentences)}
        fns, tokens = bert_contenders(Path(tmp) / "bert", args.threads)
        seconds = interleaved_medians(fns, repeats=args.repeats)
        rows["bert forward"] = {"unit": "tokens/s", **_rates(seconds, tokens)}
    setup = {
        "threads": args.threads,
        "repeats": args.repeats,
        "translation": {**vars(TRANSLATION), "extra_len": EXTRA_LEN},  # train_batch unused here
        "bert": {**BERT_MINI, "batch": BERT_BATCH, "length": 128},
    }
    results = {
        **run_meta("bench.onnx_speed", "onnxruntime", onnxruntime.__version__, setup),
        "cpu": cpu_model(),
    }
    results |= {"same_ids": same, "rows": rows}
    write(results, args.out)
    print((args.out / "onnx_speed.md").read_text())


def _rates(seconds: dict[str, float], items: int) -> dict[str, float]:
    rates = {name: items / s for name, s in seconds.items()}
    return {**rates, "ratio": rates["onnxruntime"] / rates["zoo"]}


if __name__ == "__main__":
    main()
