"""python -m tasks.translation.evaluate RUN_DIR [options]: sacreBLEU and chrF of a trained model.

Decodes a split of the run's corpus with beam search and prints the scores with sacreBLEU's
signatures (detokenised output against the raw references, 13a tokenisation).
"""

from __future__ import annotations

import json
from pathlib import Path

from tasks.translation.data import encode_split, load_pairs, split_names
from tasks.translation.inference import load_trained, model_arguments
from tasks.translation.task import score, split_translations
from zoo.cli import main_guard


def parse_args(argv: list[str] | None):
    parser = model_arguments("python -m tasks.translation.evaluate", __doc__)
    parser.add_argument("--split", default="test", choices=["valid", "test"], help="which split (default: test)")
    parser.add_argument("--alpha", type=float, default=None, help="length penalty (default: the recipe's decode.alpha)")
    parser.add_argument("--data-dir", default=None, help="data directory (default: the recipe's, else $ZOO_DATA_DIR)")
    parser.add_argument("--output", default=None, help="also write the translations to this file")
    return parser.parse_args(argv)


@main_guard
def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    loaded = load_trained(args.run_dir, args.checkpoint, args.device)
    cfg = loaded.cfg
    if args.data_dir is not None:
        cfg.data.data_dir = args.data_dir
    if args.beam_size is not None:
        cfg.decode.beam_size = args.beam_size
    if args.alpha is not None:
        cfg.decode.alpha = args.alpha
    split = encode_split(split_names(cfg.data)[args.split], load_pairs(cfg.data, args.split),
                         loaded.tokenizer, keep_text=True)
    hyps = split_translations(loaded.model, loaded.tokenizer, split, cfg.decode,
                              beam_size=cfg.decode.beam_size,
                              max_tokens=cfg.decode.max_tokens or cfg.data.max_tokens)
    if args.output:
        Path(args.output).write_text("\n".join(hyps) + "\n")
    result = {"checkpoint": str(loaded.checkpoint), "split": split.name, "sentences": len(hyps),
              "beam_size": cfg.decode.beam_size, "alpha": cfg.decode.alpha, **score(hyps, split.references)}
    print(f"{split.name}: BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}  "
          f"({len(hyps)} sentences, beam {cfg.decode.beam_size}, alpha {cfg.decode.alpha}, {loaded.checkpoint})")
    print(f"  {result['bleu_signature']}\n  {result['chrf_signature']}")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
