"""Our translation Transformer against Hugging Face's MarianMTModel built to the same dimensions.

    python -m bench.translation_speed [--preset small|base] [--repeats 5] [--threads 0]

Both models get random weights (no download), the same vocabulary size, post-norm layers, ReLU,
sinusoidal positions, sqrt(D)-scaled embeddings tied three ways, SDPA attention, fp32, and the
same batch of random source ids. Measured in one run, the contenders taking turns (medians of
interleaved repeats, so load from other processes hits both alike):

- training: target tokens per second of forward + label cross-entropy + backward + Adam step,
  in train mode (dropout on);
- decoding: sentences per second of beam search (beam 4, length limit source length + 50, KV
  cache) with `zoo.decode.beam_search` against `MarianMTModel.generate(num_beams=4)`. Both
  decode random models, which rarely end early, so both run close to the length limit; the
  mean generated lengths are reported to show that the work compared is the same.

Targets: training >= 1.0x, decoding >= 3x. Writes bench/results/translation_speed.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import MarianConfig, MarianMTModel

from bench.timing import hardware, interleaved_medians
from zoo.data.special import SPECIAL_IDS
from zoo.decode import beam_search
from zoo.models import ModelConfig, build_model

RESULTS = Path(__file__).parent / "results"
PAD, BOS, EOS = SPECIAL_IDS.pad, SPECIAL_IDS.bos, SPECIAL_IDS.eos


@dataclass
class Preset:
    layers: int
    dim: int
    ffn_dim: int
    heads: int
    vocab: int
    batch: int
    src_len: int
    decode_batch: int


PRESETS = {
    "small": Preset(layers=3, dim=256, ffn_dim=1024, heads=4, vocab=8000, batch=32, src_len=30,
                    decode_batch=32),
    "base": Preset(layers=6, dim=512, ffn_dim=2048, heads=8, vocab=37000, batch=32, src_len=30,
                   decode_batch=32),
}
EXTRA_LEN = 50
BEAM = 4


def build_ours(p: Preset) -> torch.nn.Module:
    cfg = ModelConfig(encoder_layers=p.layers, decoder_layers=p.layers, dim=p.dim, ffn_dim=p.ffn_dim,
                      num_heads=p.heads, dropout=0.1, max_len=256)
    return build_model(cfg, p.vocab, p.vocab, PAD)


def build_marian(p: Preset) -> MarianMTModel:
    cfg = MarianConfig(
        vocab_size=p.vocab, decoder_vocab_size=p.vocab, d_model=p.dim, encoder_layers=p.layers,
        decoder_layers=p.layers, encoder_attention_heads=p.heads, decoder_attention_heads=p.heads,
        encoder_ffn_dim=p.ffn_dim, decoder_ffn_dim=p.ffn_dim, activation_function="relu",
        dropout=0.1, attention_dropout=0.0, activation_dropout=0.0, max_position_embeddings=256,
        scale_embedding=True, share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
        pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=BOS, forced_eos_token_id=EOS,
        attn_implementation="sdpa")
    return MarianMTModel(cfg)


def trainer(model: torch.nn.Module, logits_of, src: torch.Tensor, tgt_in: torch.Tensor,
            tgt_out: torch.Tensor):
    """One optimizer step per call: forward, summed token cross-entropy, backward, Adam."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

    def step() -> None:
        logits = logits_of(model, src, tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD, reduction="sum")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return step


def marian_logits(model: MarianMTModel, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
    return model(input_ids=src, attention_mask=src != PAD, decoder_input_ids=tgt_in).logits


def run(preset_name: str, repeats: int) -> dict:
    p = PRESETS[preset_name]
    g = torch.Generator().manual_seed(0)
    src = torch.randint(EOS + 1, p.vocab, (p.batch, p.src_len), generator=g)
    src[:, -1] = EOS
    tgt = torch.randint(EOS + 1, p.vocab, (p.batch, p.src_len + 1), generator=g)
    tgt_in, tgt_out = tgt.clone(), tgt.clone()
    tgt_in[:, 0], tgt_out[:, -1] = BOS, EOS
    torch.manual_seed(0)
    ours, marian = build_ours(p).train(), build_marian(p).train()
    params = {"ours": sum(x.numel() for x in ours.parameters() if x.requires_grad),
              "marian": sum(x.numel() for x in marian.parameters() if x.requires_grad)}

    train_s = interleaved_medians({
        "ours": trainer(ours, lambda m, s, t: m(s, t), src, tgt_in, tgt_out),
        "marian": trainer(marian, marian_logits, src, tgt_in, tgt_out)}, repeats=repeats)
    tokens = int((tgt_out != PAD).sum())

    ours.eval(), marian.eval()
    dsrc = src[: p.decode_batch]
    lengths: dict[str, float] = {}

    def decode_ours() -> None:
        out = beam_search(ours, dsrc, special=SPECIAL_IDS, beam_size=BEAM, alpha=0.6,
                          max_len_a=1.0, max_len_b=EXTRA_LEN)
        lengths["ours"] = sum(len(h) + 1 for h in out.best()) / len(dsrc)

    def decode_marian() -> None:
        with torch.inference_mode():
            out = marian.generate(input_ids=dsrc, attention_mask=dsrc != PAD, num_beams=BEAM,
                                  length_penalty=0.6, max_new_tokens=p.src_len + EXTRA_LEN + 1,
                                  do_sample=False)
        lengths["marian"] = float((out[:, 1:] != PAD).sum(1).float().mean())

    decode_s = interleaved_medians({"ours": decode_ours, "marian": decode_marian},
                                   repeats=max(3, repeats // 2))
    return {
        "preset": preset_name, "config": asdict(p), "params": params,
        "train_tokens_per_s": {k: tokens / v for k, v in train_s.items()},
        "decode_sentences_per_s": {k: len(dsrc) / v for k, v in decode_s.items()},
        "decode_mean_length": lengths,
        "train_ratio": train_s["marian"] / train_s["ours"],
        "decode_ratio": decode_s["marian"] / decode_s["ours"],
    }


def markdown(r: dict) -> str:
    t, d = r["train_tokens_per_s"], r["decode_sentences_per_s"]
    return (
        "# Translation Transformer vs Hugging Face MarianMTModel (same dimensions, random weights)\n\n"
        f"`{r['command']}` on {r['hardware']}, torch {r['torch']}, transformers {r['transformers']}.\n"
        f"Preset {r['preset']}: {r['config']}; trainable parameters ours {r['params']['ours']:,}, "
        f"Marian {r['params']['marian']:,}.\n\n"
        "| | ours | Marian | ratio (target) |\n|---|---|---|---|\n"
        f"| training, target tokens/s | {t['ours']:.0f} | {t['marian']:.0f} | "
        f"{r['train_ratio']:.2f}x (>= 1.0x) |\n"
        f"| beam search (4), sentences/s | {d['ours']:.2f} | {d['marian']:.2f} | "
        f"{r['decode_ratio']:.2f}x (>= 3x) |\n\n"
        f"Mean generated length (with EOS): ours {r['decode_mean_length']['ours']:.1f}, "
        f"Marian {r['decode_mean_length']['marian']:.1f}.\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small",
                        help="model and batch sizes (small fits a laptop CPU; base = the paper's base)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved timing rounds for training")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    import transformers

    result = run(args.preset, args.repeats)
    result.update(hardware=hardware(), torch=torch.__version__, transformers=transformers.__version__,
                  command="python -m bench.translation_speed " + " ".join(sys.argv[1:]))
    print(f"training {result['train_ratio']:.2f}x Marian's tokens/s (target >= 1.0x); "
          f"beam search {result['decode_ratio']:.2f}x its sentences/s (target >= 3x)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "translation_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "translation_speed.md").write_text(markdown(result))


if __name__ == "__main__":
    main()
