"""python -m tasks.translation.translate RUN [--key=value ...]: translate sentences with a trained model.

Reads one sentence per line from stdin (or --input) and writes one translation per line to stdout
(or --output), decoding in length-sorted batches with beam search. A line that is not UTF-8 is
an error naming it; so is a line longer than the model's position table, unless --truncate
translates its beginning (with a notice naming the lines). --plot_attention FILE.png draws the
cross-attention of the first sentence as heatmaps, one per layer and head.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tasks.translation.data import cut_to_positions
from tasks.translation.inference import TrainedModelOptions, check_writable, load_translator, precision_of
from tasks.translation.task import translate_ids
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.data.special import SPECIAL_IDS
from zoo.data.text import read_lines, stdin_lines
from zoo.plot import plot_cross_attention
from zoo.train import evaluation


@dataclass
class TranslateOptions(TrainedModelOptions):
    input: str = field(
        default="", metadata={"help": "file of source sentences, UTF-8, .gz allowed ('' = stdin)"}
    )
    output: str = field(default="", metadata={"help": "file for the translations ('' = stdout)"})
    max_tokens: int = field(default=4096, metadata={"help": "source tokens per decoding batch"})
    truncate: bool = field(
        default=False,
        metadata={
            "help": "translate only the beginning of lines longer than the model's position table "
            "(model.max_len), with a notice; without it such a line is an error"
        },
    )
    plot_attention: str = field(
        default="", metadata={"help": "FILE.png: draw the first sentence's cross-attention (layers x heads)"}
    )


def fit_sources(sources: list[list[int]], positions: int, name: str, *, truncate: bool) -> list[list[int]]:
    """Source ids that fit the model's `positions` (EOS included): an error naming the first
    line that does not, or, with `truncate`, those lines cut with a notice on stderr."""
    fitted, cut = cut_to_positions(sources, positions)
    if not cut:
        return sources
    lines = ", ".join(str(i + 1) for i in cut[:10]) + (" ..." if len(cut) > 10 else "")
    if not truncate:
        first = cut[0]
        raise UserError(
            f"{name}:{first + 1}: {len(sources[first])} subword tokens, more than the "
            f"{positions - 1} the model takes (model.max_len {positions}, one for EOS); "
            f"{len(cut)} line(s) too long ({lines}): split them, or pass --truncate"
        )
    print(
        f"note: {name}: {len(cut)} line(s) cut to their first {positions - 1} subword tokens "
        f"(model.max_len {positions}): lines {lines}",
        file=sys.stderr,
    )
    return fitted


@main_guard
def main(argv: list[str] | None = None) -> None:
    options = parse_cli(TranslateOptions, argv, default_config=None, description=__doc__, positional=("run",))
    check_writable(options.output, "output")
    check_writable(options.plot_attention, "plot_attention")
    if options.input and not Path(options.input).is_file():
        raise UserError(f"input file not found: {options.input}")
    translator = load_translator(options)
    sentences = list(read_lines(Path(options.input)) if options.input else stdin_lines())
    tok, decode = translator.tokenizer, translator.cfg.decode
    src_ids = (
        fit_sources(
            tok.encode_batch(sentences),
            translator.model.max_len,
            options.input or "stdin",
            truncate=options.truncate,
        )
        if sentences
        else []
    )
    with evaluation(translator.model, precision_of(options, translator)) as model:
        hyp_ids = (
            translate_ids(model, src_ids, decode, beam_size=decode.beam_size, max_tokens=options.max_tokens)
            if src_ids
            else []
        )
    outputs = tok.decode_batch(hyp_ids)
    result = "\n".join(outputs) + ("\n" if outputs else "")
    if options.output:
        Path(options.output).write_text(result)
    else:
        sys.stdout.write(result)
    if options.plot_attention and sentences:
        eos, device = SPECIAL_IDS.eos, next(translator.model.parameters()).device
        first_src, first_hyp = src_ids[0] + [eos], hyp_ids[0]
        plot_cross_attention(
            translator.model,
            torch.tensor(first_src, device=device),
            torch.tensor([SPECIAL_IDS.bos] + first_hyp, device=device),
            tok.pieces(first_src),
            tok.pieces(first_hyp + [eos]),
            options.plot_attention,
        )
        print(f"cross-attention of the first sentence drawn in {options.plot_attention}", file=sys.stderr)


if __name__ == "__main__":
    main()
