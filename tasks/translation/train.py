"""python -m tasks.translation.train [--config FILE] [--key.sub=value ...]

With no arguments: the embedded demo (configs/translation/demo.yaml), a small Transformer on
the built-in synthetic English -> German-like corpus, a few minutes on 2 CPU cores, offline.
"""

from __future__ import annotations

import json
import logging
import sys

from tasks.translation.config import TranslationConfig
from tasks.translation.task import TranslationTask
from zoo.cli import main_guard
from zoo.config import parse_cli
from zoo.train import evaluation, fit

NEXT_STEPS = """
Next, real data (the data directory holds multi30k/ as in ../shared/data; set ZOO_DATA_DIR or
data.data_dir):
  python -m tasks.translation.train --config configs/translation/multi30k.yaml --data.data_dir=../shared/data
  python -m tasks.translation.download --data-dir DATA && \\
    python -m tasks.translation.train --config configs/translation/wmt14_base.yaml --data.data_dir=DATA
Evaluate or translate with a run directory:
  python -m tasks.translation.evaluate {run} --split=test
  echo "A man is riding a bike." | python -m tasks.translation.translate {run}
Average the last checkpoints (the paper: 5 for base, 20 for big), then evaluate with --checkpoint=averaged:
  python -m zoo.train.average {run} --last 5"""


@main_guard
def main(argv: list[str] | None = None) -> None:
    # Progress goes to stdout beside the runner's; stderr is kept for the one line of an error.
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    cfg = parse_cli(TranslationConfig, argv, default_config=None, description=__doc__)
    task = TranslationTask(cfg)
    result = fit(cfg, task)
    if not result.run.is_main:
        return
    with evaluation(result.model, cfg.train.precision) as model:
        test = task.evaluate(model, "test", beam_size=cfg.decode.beam_size)
    (result.run_dir / "test.json").write_text(json.dumps({"step": result.step, **test}, indent=2) + "\n")
    print(
        f"\ntest ({cfg.data.source}, {len(task.data.test)} sentences, beam {cfg.decode.beam_size}, "
        f"alpha {cfg.decode.alpha}): sacreBLEU {test['bleu']:.2f}, chrF {test['chrf']:.2f}, "
        f"perplexity {test['ppl']:.2f}"
    )
    print(NEXT_STEPS.format(run=result.run_dir))


if __name__ == "__main__":
    main()
