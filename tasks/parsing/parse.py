"""python -m tasks.parsing.parse RUN [--input FILE] [--pretty] [--png FILE] [--key=value ...]

Parses sentences (one per line, from --input or stdin) with a trained parser and prints one
bracketed tree per line. Lines are tokenised as the Penn Treebank is (nltk's Treebank
tokenizer: "don't" -> "do n't", final period split off) unless --pretokenized, which splits on
spaces only. The seq2seq parser's part-of-speech tags are XX (it does not predict them).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
from nltk import Tree

from tasks.parsing.chart.batches import chart_input
from tasks.parsing.data import treebank_tokens
from tasks.parsing.draw import plot_span_scores, plot_tree
from tasks.parsing.inference import Parser, TrainedParserOptions, load_parser
from tasks.parsing.linearize import linearize
from tasks.parsing.task import parse
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.data.special import SPECIAL_IDS
from zoo.data.text import read_lines, stdin_lines
from zoo.plot import plot_cross_attention
from zoo.train import evaluation


@dataclass
class ParseOptions(TrainedParserOptions):
    input: str = field(default="", metadata={"help": "file of sentences, one per line ('' = stdin)"})
    pretokenized: bool = field(default=False, metadata={"help": "split lines on spaces only"})
    pretty: bool = field(default=False, metadata={"help": "draw each tree as text art instead of one line"})
    png: str = field(default="", metadata={"help": "also draw the first tree into this PNG file"})
    scores_png: str = field(
        default="",
        metadata={"help": "chart parser: also draw the first sentence's span scores into this PNG file"},
    )
    attention_png: str = field(
        default="",
        metadata={
            "help": "seq2seq parser: also draw the first sentence's cross-attention (decoder layers x "
            "heads; tree symbols against words) into this PNG file"
        },
    )


def plot_parse_attention(parser: Parser, words: list[str], tree: Tree, path: str) -> str:
    """The seq2seq parser's cross-attention while it writes `tree` (teacher-forced)."""
    vocab = parser.vocab
    symbols = linearize(tree)
    src = torch.tensor(vocab.word_ids(words) + [SPECIAL_IDS.eos])
    hyp = torch.tensor([SPECIAL_IDS.bos] + [vocab.symbol_index[s] for s in symbols])
    with evaluation(parser.model, parser.precision) as model:
        plot_cross_attention(model, src, hyp, words + ["</s>"], symbols + ["</s>"], path)
    return path


@main_guard
def main(argv: list[str] | None = None) -> list[str]:
    options = parse_cli(ParseOptions, argv, default_config=None, description=__doc__, positional=("run",))
    parser = load_parser(options)
    for key, kind in (("scores_png", "chart"), ("attention_png", "seq2seq")):
        if getattr(options, key) and parser.cfg.model.kind != kind:
            raise UserError(
                f"--{key}: only for the {kind} parser; {options.run} holds a {parser.cfg.model.kind} parser"
            )
    # Bytes decoded line by line, so a line that is not UTF-8 is named (file or stdin, line).
    lines = read_lines(Path(options.input)) if options.input else stdin_lines()
    sentences = [line.split() if options.pretokenized else treebank_tokens(line) for line in lines if line]
    with evaluation(parser.model, parser.precision) as model:
        trees = parse(model, parser.vocab, sentences, parser.cfg)
    out = [tree.pformat(margin=sys.maxsize) for tree in trees]
    for tree, line in zip(trees, out):
        if options.pretty:
            tree.pretty_print()
        else:
            print(line)
    if options.png and trees:
        print(f"wrote {plot_tree(trees[0], Path(options.png))}", file=sys.stderr)
    if options.attention_png and trees and trees[0].label() != "TOP":  # TOP: left unparsed
        print(
            f"wrote {plot_parse_attention(parser, sentences[0], trees[0], options.attention_png)}",
            file=sys.stderr,
        )
    if options.scores_png and sentences:
        x = chart_input(sentences[:1], parser.vocab)
        with evaluation(parser.model, parser.precision) as model:
            scores, _ = model(*x.model_inputs())
        path = plot_span_scores(
            scores[0].float().cpu(),
            sentences[0],
            parser.vocab.labels,
            Path(options.scores_png),
            title="chart parser: best label score of every span",
        )
        print(f"wrote {path}", file=sys.stderr)
    return out


if __name__ == "__main__":
    main()
