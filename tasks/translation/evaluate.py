"""python -m tasks.translation.evaluate RUN [--option=value ...]: sacreBLEU and chrF of a
trained model on a split
(the same as `python -m zoo evaluate translation`; `--help` lists the options)."""

from tasks.translation.spec import TranslationSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(TranslationSpec(), "evaluate", argv)


if __name__ == "__main__":
    main()
