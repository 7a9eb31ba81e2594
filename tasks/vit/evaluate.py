"""python -m tasks.vit.evaluate RUN [--option=value ...]: top-1/top-5 of a trained ViT on a split
and its confusion matrix in RUN/figures/ (the same as `python -m zoo evaluate vit`; `--help`
lists the options). The attention rollout is `python -m zoo attention vit RUN`."""

from tasks.vit.spec import ViTSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(ViTSpec(), "evaluate", argv)


if __name__ == "__main__":
    main()
