"""echo "A sentence.<TAB>Another." | python -m tasks.bert.attention RUN [--output FILE]: the
self-attention of every layer and head on the first line (a sentence, or a pair separated by a
tab) as a grid of heatmaps, rows layers, columns heads (the same as `python -m zoo attention bert`;
`--help` lists the options)."""

from tasks.bert.spec import BertSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(BertSpec(), "attention", argv)


if __name__ == "__main__":
    main()
