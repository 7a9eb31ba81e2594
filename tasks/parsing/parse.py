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

from nltk.tokenize import TreebankWordTokenizer

from tasks.parsing.data import chart_input
from tasks.parsing.draw import plot_span_scores, plot_tree
from tasks.parsing.inference import TrainedParserOptions, load_parser
from tasks.parsing.task import parse
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.data.text import read_lines, stdin_lines
from zoo.train import evaluation


BRACKETS = {"(": "-LRB-", ")": "-RRB-"}


@dataclass
class ParseOptions(TrainedParserOptions):
    input: str = field(default="", metadata={"help": "file of sentences, one per line ('' = stdin)"})
    pretokenized: bool = field(default=False, metadata={"help": "split lines on spaces only"})
    pretty: bool = field(default=False, metadata={"help": "draw each tree as text art instead of one line"})
    png: str = field(default="", metadata={"help": "also draw the first tree into this PNG file"})
    scores_png: str = field(default="", metadata={
        "help": "chart parser: also draw the first sentence's span scores into this PNG file"})


@main_guard
def main(argv: list[str] | None = None) -> list[str]:
    options = parse_cli(ParseOptions, argv, default_config=None, description=__doc__, positional=("run",))
    parser = load_parser(options)
    # Bytes decoded line by line, so a line that is not UTF-8 is named (file or stdin, line).
    lines = read_lines(Path(options.input)) if options.input else stdin_lines()
    tokenize = str.split if options.pretokenized else TreebankWordTokenizer().tokenize
    # A bare bracket would make the printed tree unreadable: the Treebank's -LRB- / -RRB-.
    sentences = [[BRACKETS.get(word, word) for word in tokenize(line)] for line in lines if line]
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
    if options.scores_png and sentences:
        if parser.cfg.model.kind != "chart":
            raise UserError("--scores_png: only the chart parser scores spans")
        x = chart_input(sentences[:1], parser.vocab)
        with evaluation(parser.model, parser.precision) as model:
            scores, _ = model(*x.model_inputs())
        path = plot_span_scores(scores[0].float().cpu(), sentences[0], parser.vocab.labels, Path(options.scores_png),
                                title="chart parser: best label score of every span")
        print(f"wrote {path}", file=sys.stderr)
    return out


if __name__ == "__main__":
    main()
