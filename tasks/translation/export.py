"""python -m tasks.translation.export RUN [--option=value ...]: write a trained model for CTranslate2
(the same as `python -m zoo export translation`; `--help` lists the options)."""

from tasks.translation.spec import TranslationSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(TranslationSpec(), "export", argv)


if __name__ == "__main__":
    main()
