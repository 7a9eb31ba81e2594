"""echo "TEXT with [MASK]" | python -m tasks.bert.fill_mask RUN [--top_k=5] [--json]: per line, the
top-k fillers of each [MASK] with their probabilities, as the transformers `fill-mask` pipeline
gives them; RUN is a run, a checkpoint, a Hugging Face directory or hub name
(the same as `python -m zoo fill-mask bert`; `--help` lists the options)."""

from tasks.bert.spec import BertSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(BertSpec(), "fill-mask", argv)


if __name__ == "__main__":
    main()
