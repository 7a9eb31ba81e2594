"""python -m tasks.bert.train [--config FILE] [--key.sub=value ...]: pretrain BERT (MLM + NSP).

With no arguments: the embedded default (configs/bert/default.yaml), a tiny BERT on the built-in
corpus of scripted documents, offline, a few minutes on two CPU cores; it ends with held-out
masked-LM and next-sentence accuracy. An installed package has no configs/ folder and uses the
schema's defaults, which are the same recipe (a test keeps the two equal).
"""

from __future__ import annotations

from pathlib import Path

from tasks.bert.config import BertPretrainingConfig
from tasks.bert.task import BertTask
from zoo.cli import main_guard
from zoo.config import parse_cli
from zoo.train import fit

DEFAULT_RECIPE = Path(__file__).resolve().parents[2] / "configs" / "bert" / "default.yaml"
NEXT_STEPS = """
Next:
  python -m tasks.bert.evaluate {run}          # MLM accuracy/perplexity, NSP accuracy
  echo "the town lies on the banks of the [MASK] ." | python -m tasks.bert.fill_mask {run}
  python -m tasks.bert.export {run} OUT_DIR    # a Hugging Face BertForPreTraining directory
Real data (the data directory holds enwiki-extract/ and wikitext-2/, as ../shared/data does):
  python -m tasks.bert.train --config configs/bert/bert_mini.yaml --data.data_dir=DATA
  python -m tasks.bert.train --config configs/bert/bert_base.yaml --data.data_dir=DATA  # needs GPUs"""


@main_guard
def main(argv: list[str] | None = None) -> None:
    cfg = parse_cli(
        BertPretrainingConfig,
        argv,
        default_config=DEFAULT_RECIPE if DEFAULT_RECIPE.is_file() else None,
        description="Pretrain BERT with masked-LM and next-sentence prediction.",
    )
    result = fit(cfg, BertTask(cfg))
    if not result.run.is_main:
        return
    m = result.metrics
    print(
        f"held-out: MLM accuracy {m['mlm_acc']:.2f}%  perplexity {m['mlm_ppl']:.2f}  "
        f"NSP accuracy {m['nsp_acc']:.2f}%  ({int(m['examples']):,} examples, step "
        f"{result.step}, run directory {result.run_dir})"
    )
    print(NEXT_STEPS.format(run=result.run_dir))


if __name__ == "__main__":
    main()
