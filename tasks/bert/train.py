"""python -m tasks.bert.train [--config FILE] [--key.sub=value ...]: pretrain BERT (MLM + NSP)
(the same as `python -m zoo train bert`).

With no arguments: the embedded default (configs/bert/default.yaml), a tiny BERT on the built-in
corpus of scripted documents, offline, a few minutes on two CPU cores; it ends with held-out
masked-LM and next-sentence accuracy. An installed package has no configs/ folder and uses the
schema's defaults, which are the same recipe (a test keeps the two equal).
"""

from tasks.bert.spec import BertSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(BertSpec(), "train", argv)


if __name__ == "__main__":
    main()
