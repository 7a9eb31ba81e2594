"""python -m tasks.bert.export RUN --output OUT_DIR [--checkpoint=best|last|averaged|FILE]: a trained
BERT as a Hugging Face directory (config.json, model.safetensors, vocab.txt,
tokenizer_config.json) that `BertForPreTraining.from_pretrained(OUT_DIR)` and
`BertTokenizerFast.from_pretrained(OUT_DIR)` load with the same logits and ids
(the same as `python -m zoo export bert`; `--help` lists the options)."""

from tasks.bert.spec import BertSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(BertSpec(), "export", argv)


if __name__ == "__main__":
    main()
