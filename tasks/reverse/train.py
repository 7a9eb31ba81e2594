"""python -m tasks.reverse.train [--config FILE] [--key=value ...]: the runner's demo
(the same as `python -m zoo train reverse`)."""

from tasks.reverse.spec import ReverseSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(ReverseSpec(), "train", argv)


if __name__ == "__main__":
    main()
