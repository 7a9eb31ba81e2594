"""python -m tasks.parsing.evaluate RUN [--split test] [--key=value ...]: EVALB scores of a trained parser.

Parses a split of the run's treebank, prints EVALB's summary (COLLINS.prm rules, see
tasks/parsing/evalb.py) and P/R/F1 per label, and writes the predicted and gold trees in PTB
bracketed format (one per line) so any external scorer (EVALB itself) can read them.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tasks.parsing.data import load_treebank
from tasks.parsing.evalb import report
from tasks.parsing.inference import TrainedParserOptions, load_parser
from tasks.parsing.parsers import parser_for
from tasks.parsing.task import score_trees
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.train import evaluation


@dataclass
class EvaluateOptions(TrainedParserOptions):
    split: str = field(default="test", metadata={"help": "dev | test"})
    data_dir: str = field(
        default="", metadata={"help": "data directory ('' = the recipe's, else $ZOO_DATA_DIR)"}
    )
    out: str = field(
        default="",
        metadata={
            "help": "folder for the tree files and scores ('' = RUN/eval, or RUN/eval-ensembleN for N "
            "parsers)"
        },
    )
    limit: int = field(
        default=0, metadata={"help": "score only the first N trees (0 = all; for quick checks)"}
    )


def write_trees(trees: list, path: Path) -> Path:
    path.write_text("".join(t.pformat(margin=sys.maxsize) + "\n" for t in trees), encoding="utf-8")
    return path


@main_guard
def main(argv: list[str] | None = None) -> dict:
    options = parse_cli(EvaluateOptions, argv, default_config=None, description=__doc__, positional=("run",))
    if options.split not in ("dev", "test"):
        raise UserError(f"--split must be dev or test, not {options.split!r}")
    parser = load_parser(options, [f"data.data_dir={options.data_dir}"] if options.data_dir else None)
    cfg = parser.cfg
    gold = load_treebank(cfg.data)[options.split]
    gold = gold[: options.limit] if options.limit else gold
    started = time.perf_counter()
    with evaluation(parser.model, parser.precision) as model:
        scored, predicted = score_trees(model, parser.vocab, gold, cfg)
    seconds = time.perf_counter() - started
    n = len(parser.members)
    out = (
        Path(options.out)
        if options.out
        else parser.trained.run_dir / ("eval" if n == 1 else f"eval-ensemble{n}")
    )
    out.mkdir(parents=True, exist_ok=True)
    pred_path = write_trees(predicted, out / f"{options.split}.pred.mrg")
    write_trees(gold, out / f"{options.split}.gold.mrg")
    print(report(scored))
    result = {
        "checkpoint": str(parser.trained.path),
        "ema": parser.trained.ema,
        "kind": cfg.model.kind,
        "ensemble": [str(m.path) for m in parser.members] if n > 1 else None,
        "split": options.split,
        "sentences": len(gold),
        **scored.metrics(tags=parser_for(cfg).predicts_tags),
        "beam_size": parser_for(cfg).beam_size(cfg),
        "seconds": round(seconds, 2),
        "sentences_per_s": round(len(gold) / seconds, 2),
        "device": options.device,
        "predicted": str(pred_path),
    }
    (out / f"{options.split}.json").write_text(json.dumps(result, indent=2) + "\n")
    models = " + ".join(str(m.path) for m in parser.members)
    print(
        f"\n{options.split}: labeled F1 {result['f1']:.2f}, exact match {result['exact']:.2f} "
        f"({len(gold)} sentences, {result['sentences_per_s']:.1f} sentences/s, {models})"
    )
    print(f"trees: {pred_path} (gold beside it)")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
