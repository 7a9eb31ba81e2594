"""python -m tasks.bert.finetune.train [--config FILE] [--key.sub=value ...]: fine-tune BERT
(the same as `python -m zoo train bert_finetune`).

With no arguments: the embedded default (configs/bert/finetune_default.yaml), a tiny random BERT
learning to classify the built-in corpus's sentences by the kind of entity they describe,
offline, a few minutes on two CPU cores; it ends with the held-out accuracy. `--head=tag` and
`--head=span` train the other heads on their built-in sets (names and dates tagged B-/I-/O;
questions answered from the document). An installed package has no configs/ folder and uses the
schema's defaults, which are the same recipe (a test keeps the two equal).
"""

from tasks.bert.finetune.spec import FinetuneSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(FinetuneSpec(), "train", argv)


if __name__ == "__main__":
    main()
