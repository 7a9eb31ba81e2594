"""python -m tasks.translation.translate RUN [--option=value ...]: translate sentences, one per
line, from stdin or --input
(the same as `python -m zoo translate translation`; `--help` lists the options)."""

from tasks.translation.spec import TranslationSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(TranslationSpec(), "translate", argv)


if __name__ == "__main__":
    main()
