"""python -m tasks.bert.evaluate RUN [--split valid|test] [--option=value ...]: masked-LM accuracy
and perplexity and next-sentence accuracy of a trained BERT (a run, a checkpoint, a Hugging Face
directory or hub name) on the held-out documents (valid) or WikiText-2 test (test)
(the same as `python -m zoo evaluate bert`; `--help` lists the options)."""

from tasks.bert.spec import BertSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(BertSpec(), "evaluate", argv)


if __name__ == "__main__":
    main()
