"""python -m tasks.parsing.parse RUN [--input FILE] [--pretty] [--option=value ...]: parse sentences,
one per line, from stdin or --input, into bracketed trees, one per line
(the same as `python -m zoo parse parsing`; `--help` lists the options).

Lines are tokenised as the Penn Treebank is (nltk's Treebank tokenizer: "don't" -> "do n't",
final period split off) unless --pretokenized, which splits on spaces only. The seq2seq parser's
part-of-speech tags are XX (it does not predict them). Pictures (span scores, cross-attention,
the tree) are drawn by `python -m zoo attention parsing RUN --output FILE`.
"""

import sys

from tasks.parsing.spec import ParsingSpec
from zoo.cli import main_guard
from zoo.config import UserError
from zoo.verbs.cli import run_verb

# The picture options of this CLI before the shared verbs: told where they went.
PICTURES = {"png": "tree", "scores_png": "scores", "attention_png": "attention"}


@main_guard
def main(argv: list[str] | None = None):
    argv = list(sys.argv[1:] if argv is None else argv)
    for arg in argv:
        key = arg[2:].partition("=")[0].replace("-", "_")
        if arg.startswith("--") and key in PICTURES:
            raise UserError(
                f"--{key}: pictures are drawn by the attention verb: python -m zoo attention parsing RUN "
                f"--picture={PICTURES[key]} --output FILE"
            )
    return run_verb(ParsingSpec(), "parse", argv)


if __name__ == "__main__":
    main()
