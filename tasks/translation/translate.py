"""python -m tasks.translation.translate RUN [--key=value ...]: translate sentences with a trained model.

Reads one sentence per line from stdin (or --input) and writes one translation per line to stdout
(or --output), decoding in length-sorted batches with beam search. --plot_attention FILE.png
draws the cross-attention of the first sentence as heatmaps, one per layer and head.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tasks.translation.inference import TrainedModelOptions, load_translator, precision_of
from tasks.translation.plot import plot_cross_attention
from tasks.translation.task import translate_text
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.data.special import SPECIAL_IDS
from zoo.train import evaluation


@dataclass
class TranslateOptions(TrainedModelOptions):
    input: str = field(default="", metadata={"help": "file of source sentences ('' = stdin)"})
    output: str = field(default="", metadata={"help": "file for the translations ('' = stdout)"})
    max_tokens: int = field(default=4096, metadata={"help": "source tokens per decoding batch"})
    plot_attention: str = field(default="", metadata={
        "help": "FILE.png: draw the first sentence's cross-attention (layers x heads)"})


@main_guard
def main(argv: list[str] | None = None) -> None:
    options = parse_cli(TranslateOptions, argv, default_config=None, description=__doc__, positional=("run",))
    translator = load_translator(options)
    if options.input and not Path(options.input).is_file():
        raise UserError(f"input file not found: {options.input}")
    text = Path(options.input).read_text() if options.input else sys.stdin.read()
    sentences = [line.strip() for line in text.splitlines()]
    decode = translator.cfg.decode
    with evaluation(translator.model, precision_of(options, translator)) as model:
        outputs = translate_text(model, translator.tokenizer, sentences, decode, beam_size=decode.beam_size,
                                 max_tokens=options.max_tokens) if sentences else []
    result = "\n".join(outputs) + ("\n" if outputs else "")
    if options.output:
        Path(options.output).write_text(result)
    else:
        sys.stdout.write(result)
    if options.plot_attention and sentences:
        tok, eos = translator.tokenizer, SPECIAL_IDS.eos
        src_ids = tok.encode(sentences[0]) + [eos]
        hyp_ids = tok.encode(outputs[0])
        device = next(translator.model.parameters()).device
        plot_cross_attention(translator.model, torch.tensor(src_ids, device=device),
                             torch.tensor([SPECIAL_IDS.bos] + hyp_ids, device=device),
                             tok.pieces(src_ids), tok.pieces(hyp_ids + [eos]), options.plot_attention)
        print(f"cross-attention of the first sentence drawn in {options.plot_attention}", file=sys.stderr)


if __name__ == "__main__":
    main()
