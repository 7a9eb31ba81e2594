"""python -m tasks.gpt.train [--config FILE] [--key.sub=value ...]: train a GPT language model
(the same as `python -m zoo train gpt`).

With no arguments: the embedded default (configs/gpt/default.yaml), a small GPT on the built-in
corpus of scripted documents, offline, a few minutes on two CPU cores; it ends with held-out
perplexity, a sampled continuation and the commands for the real recipes. An installed package
has no configs/ folder and uses the schema's defaults, which are the same recipe (a test keeps
the two equal).
"""

from tasks.gpt.spec import GPTSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(GPTSpec(), "train", argv)


if __name__ == "__main__":
    main()
