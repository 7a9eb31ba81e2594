"""python -m tasks.vit.classify RUN [--option=value ...]: classify images, one file or folder per
line from stdin or --input, into PATH<TAB>CLASS<TAB>PROB lines (the same as
`python -m zoo classify vit`; `--help` lists the options).

    echo digit.png | python -m tasks.vit.classify runs/vit-digits
"""

from tasks.vit.spec import ViTSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(ViTSpec(), "classify", argv)


if __name__ == "__main__":
    main()
