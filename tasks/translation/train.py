"""python -m tasks.translation.train [--config FILE] [--key.sub=value ...]
(the same as `python -m zoo train translation`).

With no arguments: the embedded demo (configs/translation/demo.yaml), a small Transformer on
the built-in synthetic English -> German-like corpus, a few minutes on 2 CPU cores, offline.
"""

from tasks.translation.spec import TranslationSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(TranslationSpec(), "train", argv)


if __name__ == "__main__":
    main()
