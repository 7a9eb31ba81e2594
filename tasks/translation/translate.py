"""python -m tasks.translation.translate RUN_DIR [options]: translate sentences with a trained model.

Reads one sentence per line from stdin (or --input) and writes one translation per line to stdout
(or --output), decoding in length-sorted batches with beam search. --plot-attention FILE.png
draws the cross-attention of the first sentence as heatmaps, one per layer and head.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from tasks.translation.inference import load_trained, model_arguments
from tasks.translation.plot import plot_cross_attention
from tasks.translation.task import translate_text
from tasks.translation.tokenizer import BOS_ID, EOS_ID
from zoo.cli import main_guard
from zoo.config import UserError


def parse_args(argv: list[str] | None):
    parser = model_arguments("python -m tasks.translation.translate", __doc__)
    parser.add_argument("--input", default=None, help="file of source sentences (default: stdin)")
    parser.add_argument("--output", default=None, help="file for the translations (default: stdout)")
    parser.add_argument("--max-tokens", type=int, default=4096, help="source tokens per batch")
    parser.add_argument("--plot-attention", default=None, metavar="FILE.png",
                        help="draw the first sentence's cross-attention (layers x heads)")
    return parser.parse_args(argv)


@main_guard
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    loaded = load_trained(args.run_dir, args.checkpoint, args.device)
    if args.input is not None and not Path(args.input).is_file():
        raise UserError(f"input file not found: {args.input}")
    text = Path(args.input).read_text() if args.input else sys.stdin.read()
    sentences = [line.strip() for line in text.splitlines()]
    beam = args.beam_size or loaded.cfg.decode.beam_size
    outputs = translate_text(loaded.model, loaded.tokenizer, sentences, loaded.cfg.decode,
                             beam_size=beam, max_tokens=args.max_tokens) if sentences else []
    result = "\n".join(outputs) + ("\n" if outputs else "")
    if args.output:
        Path(args.output).write_text(result)
    else:
        sys.stdout.write(result)
    if args.plot_attention and sentences:
        tok = loaded.tokenizer
        src_ids = tok.encode(sentences[0]) + [EOS_ID]
        hyp_ids = tok.encode(outputs[0])
        device = next(loaded.model.parameters()).device
        plot_cross_attention(loaded.model, torch.tensor(src_ids, device=device),
                             torch.tensor([BOS_ID] + hyp_ids, device=device),
                             [tok.sp.id_to_piece(i) for i in src_ids],
                             [tok.sp.id_to_piece(i) for i in hyp_ids + [EOS_ID]], args.plot_attention)
        print(f"cross-attention of the first sentence drawn in {args.plot_attention}", file=sys.stderr)


if __name__ == "__main__":
    main()
