"""python -m tasks.parsing.train [--config FILE] [--key.sub=value ...]: train a constituency parser
(the same as `python -m zoo train parsing`).

With no arguments: the embedded default (configs/parsing/default.yaml), the chart parser on the
built-in grammar treebank (no data, a few minutes on 2 CPU cores), then EVALB on its test trees.
`--model.kind=seq2seq` (or configs/parsing/ptb_sample_seq2seq.yaml) trains the paper's parser.
"""

from tasks.parsing.spec import ParsingSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(ParsingSpec(), "train", argv)


if __name__ == "__main__":
    main()
