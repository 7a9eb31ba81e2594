"""python -m tasks.bert.export RUN OUT_DIR [--checkpoint=best|last|averaged|FILE]

Save a trained zoo BERT as a Hugging Face directory (config.json, model.safetensors, vocab.txt,
tokenizer_config.json) that `BertForPreTraining.from_pretrained(OUT_DIR)` and
`BertTokenizerFast.from_pretrained(OUT_DIR)` load with the same logits and ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tasks.bert.hf import load_bert
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.convert.hf_bert import write_hf_directory
from zoo.train.options import CheckpointOptions


@dataclass
class ExportConfig(CheckpointOptions):
    out: str = field(default="", metadata={"help": "the directory to write (required)"})


@main_guard
def main(argv: list[str] | None = None) -> None:
    args = parse_cli(
        ExportConfig,
        argv,
        default_config=None,
        positional=("run", "out"),
        description=__doc__.split("\n\n")[1],
    )
    if not args.run or not args.out:
        raise UserError("name the run and the output directory (python -m tasks.bert.export RUN OUT_DIR)")
    out = write_hf_directory(load_bert(args.run, which=args.checkpoint), args.out)
    print(f"wrote {out} (load it with transformers.BertForPreTraining.from_pretrained)")


if __name__ == "__main__":
    main()
