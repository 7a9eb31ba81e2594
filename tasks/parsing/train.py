"""python -m tasks.parsing.train [--config FILE] [--key.sub=value ...]: train a constituency parser.

With no arguments: the embedded default (configs/parsing/default.yaml), the chart parser on the
built-in grammar treebank (no data, a few minutes on 2 CPU cores), then EVALB on its test trees.
"""

from __future__ import annotations

import json

from tasks.parsing.config import ParsingConfig
from tasks.parsing.evalb import report
from tasks.parsing.task import ParsingTask, score_trees
from zoo.cli import main_guard
from zoo.config import parse_cli
from zoo.train import evaluation, fit

NEXT_STEPS = """
Parse or score with the run directory:
  echo "The man saw the dog with the telescope ." | python -m tasks.parsing.parse {run} --pretty
  python -m tasks.parsing.evaluate {run} --split test
Real data (the data directory holds ptb-sample/ as in ../shared/data; set ZOO_DATA_DIR or data.data_dir):
  python -m tasks.parsing.train --config configs/parsing/ptb_sample_chart.yaml --data.data_dir=../shared/data
  python -m tasks.parsing.train --config configs/parsing/ptb_sample_seq2seq.yaml --data.data_dir=../shared/data
The full WSJ treebank (sections 02-21 train, 22 dev, 23 test):
  python -m tasks.parsing.train --config configs/parsing/wsj_seq2seq.yaml --data.path=/path/to/wsj"""


@main_guard
def main(argv: list[str] | None = None) -> None:
    cfg = parse_cli(ParsingConfig, argv, default_config=None, description=__doc__)
    task = ParsingTask(cfg)
    result = fit(cfg, task)
    if not result.run.is_main:
        return
    with evaluation(result.model, result.run.precision) as model:
        scored, _ = score_trees(model, task.vocab, task.treebank["test"], cfg)
    metrics = scored.metrics(tags=task.parser.predicts_tags)
    (result.run_dir / "test.json").write_text(json.dumps({"step": result.step, **metrics}, indent=2) + "\n")
    print(report(scored).split("\n-- len")[0])
    beam_size = task.parser.beam_size(cfg)
    beam = f", beam {beam_size}" if beam_size else ""
    print(
        f"\ntest ({cfg.data.source}, {len(task.treebank['test'])} trees, {cfg.model.kind} parser{beam}): "
        f"labeled F1 {metrics['f1']:.2f}, exact match {metrics['exact']:.2f}"
    )
    print(NEXT_STEPS.format(run=result.run_dir))


if __name__ == "__main__":
    main()
