"""python -m tasks.parsing.evaluate RUN [--option=value ...]: EVALB scores of a trained parser on a split
(the same as `python -m zoo evaluate parsing`; `--help` lists the options).

Prints EVALB's summary (COLLINS.prm rules, see tasks/parsing/evalb.py) and P/R/F1 per label;
`--output FILE` writes the predicted trees in PTB bracketed format, one per line, and `--gold
FILE` the gold ones, so any external scorer (EVALB itself) can read them.
"""

from tasks.parsing.spec import ParsingSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(ParsingSpec(), "evaluate", argv)


if __name__ == "__main__":
    main()
