"""python -m tasks.bert.evaluate RUN [--checkpoint=best|last|averaged|FILE] [--key=value ...]

Masked-LM accuracy and perplexity and next-sentence accuracy of a trained BERT on the run's
held-out documents (wiki_29 for enwiki-extract, the held-out part of the built-in corpus) and on
WikiText-2 valid/test when the data directory holds them. RUN may also be a Hugging Face BERT
directory (then only WikiText is scored). Examples are built as in training, with the fixed
evaluation seed, so every model is scored on the same pairs and masks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tasks.bert.config import DataConfig
from tasks.bert.data import EVAL_SEED, load_documents, make_examples
from tasks.bert.hf import LoadedBert, load_bert
from tasks.bert.task import score_examples
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.data.documents import read_documents
from zoo.data.paths import resolve_data_dir
from zoo.train import evaluation
from zoo.train.options import CheckpointOptions

WIKITEXT_SPLITS = ("valid", "test")


@dataclass
class EvaluateConfig(CheckpointOptions):
    data_dir: str = field(
        default="", metadata={"help": "data directory ('' = as trained, else $ZOO_DATA_DIR)"}
    )
    wikitext: str = field(
        default="wikitext-2",
        metadata={"help": "folder under the data directory with valid.txt/test.txt ('' = skip)"},
    )
    max_seq_length: int = field(
        default=0, metadata={"help": "tokens per example (0 = as trained; 128 for Hugging Face directories)"}
    )
    batch_size: int = field(default=64, metadata={"help": "examples per batch"})
    limit: int = field(default=0, metadata={"help": "score the first N examples of each set (0 = all)"})
    precision: str = field(default="", metadata={"help": "fp32 | bf16 ('' = as trained)"})
    out: str = field(
        default="",
        metadata={
            "help": "JSON file for the results ('' = RUN/eval.json, or none for a Hugging Face directory)"
        },
    )


def _data_config(loaded: LoadedBert, args: EvaluateConfig) -> DataConfig:
    data = DataConfig() if loaded.recipe is None else loaded.recipe.data
    if args.data_dir:
        data.data_dir = args.data_dir
    if args.max_seq_length:
        data.max_seq_length = args.max_seq_length
    return data


def evaluation_sets(loaded: LoadedBert, data: DataConfig, args: EvaluateConfig) -> dict[str, list]:
    """{name: documents} for the run's held-out documents and the WikiText splits found."""
    sets = {}
    if loaded.recipe is not None:
        sets[f"held-out ({data.source})"] = load_documents(data, "valid")
    root = resolve_data_dir(data.data_dir)
    folder = root / args.wikitext if root is not None and args.wikitext else None
    for split in WIKITEXT_SPLITS:
        if folder is not None and (folder / f"{split}.txt").is_file():
            sets[f"{args.wikitext} {split}"] = read_documents([folder / f"{split}.txt"], "wikitext")[0]
    if not sets:
        raise UserError(
            "nothing to evaluate: a Hugging Face directory needs --data_dir with "
            f"{args.wikitext or 'a WikiText folder'}/valid.txt or test.txt"
        )
    return sets


@main_guard
def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    args = parse_cli(
        EvaluateConfig, argv, default_config=None, positional=("run",), description=__doc__.split("\n\n")[1]
    )
    loaded = load_bert(args.run, which=args.checkpoint)
    data = _data_config(loaded, args)
    precision = args.precision or (loaded.recipe.train.precision if loaded.recipe else "fp32")
    results = {}
    for name, documents in evaluation_sets(loaded, data, args).items():
        examples = make_examples(documents, loaded.tokenizer, data, seed=EVAL_SEED)
        with evaluation(loaded.model, precision):
            m = score_examples(loaded.model, examples, batch_size=args.batch_size, limit=args.limit)
        results[name] = m
        print(
            f"{name}: MLM accuracy {m['mlm_acc']:.2f}%  perplexity {m['mlm_ppl']:.2f}  "
            f"NSP accuracy {m['nsp_acc']:.2f}%  ({int(m['examples']):,} examples of "
            f"{len(documents):,} documents)"
        )
    out = Path(args.out) if args.out else (loaded.run_dir / "eval.json" if loaded.run_dir else None)
    if out is not None:
        out.write_text(json.dumps({"source": str(loaded.source), "results": results}, indent=2) + "\n")
        print(f"wrote {out}")
    return results


if __name__ == "__main__":
    main()
