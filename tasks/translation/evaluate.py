"""python -m tasks.translation.evaluate RUN [--key=value ...]: sacreBLEU and chrF of a trained model.

Decodes a split of the run's corpus with beam search and prints the scores with sacreBLEU's
signatures (detokenised output against the raw references, 13a tokenisation).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tasks.translation.data import encode_split, load_pairs, split_names
from tasks.translation.inference import TrainedModelOptions, check_writable, load_translator, precision_of
from tasks.translation.task import score, split_translations
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.train import evaluation


@dataclass
class EvaluateOptions(TrainedModelOptions):
    split: str = field(default="test", metadata={"help": "valid | test"})
    alpha: float | None = field(
        default=None, metadata={"help": "length penalty (default: the recipe's decode.alpha)"}
    )
    data_dir: str = field(
        default="", metadata={"help": "data directory ('' = the recipe's, else $ZOO_DATA_DIR)"}
    )
    output: str = field(default="", metadata={"help": "also write the translations to this file"})


@main_guard
def main(argv: list[str] | None = None) -> dict:
    options = parse_cli(EvaluateOptions, argv, default_config=None, description=__doc__, positional=("run",))
    if options.split not in ("valid", "test"):
        raise UserError(f"--split must be valid or test, not {options.split!r}")
    overrides = [f"data.data_dir={options.data_dir}"] if options.data_dir else []
    overrides += [f"decode.alpha={options.alpha}"] if options.alpha is not None else []
    check_writable(options.output, "output")
    translator = load_translator(options, overrides)
    cfg, tokenizer = translator.cfg, translator.tokenizer
    split = encode_split(
        split_names(cfg.data)[options.split],
        load_pairs(cfg.data, options.split),
        tokenizer,
        truncate=cfg.model.max_len,
        keep_text=True,
    )
    with evaluation(translator.model, precision_of(options, translator)) as model:
        hyps = split_translations(
            model,
            tokenizer,
            split,
            cfg.decode,
            beam_size=cfg.decode.beam_size,
            max_tokens=cfg.decode.max_tokens or cfg.data.max_tokens,
        )
    if options.output:
        Path(options.output).write_text("\n".join(hyps) + "\n")
    path = translator.trained.path
    result = {
        "checkpoint": str(path),
        "ema": translator.trained.ema,
        "split": split.name,
        "sentences": len(hyps),
        "beam_size": cfg.decode.beam_size,
        "alpha": cfg.decode.alpha,
        "patience": cfg.decode.patience,
        **score(hyps, split.references),
    }
    print(
        f"{split.name}: BLEU {result['bleu']:.2f}  chrF {result['chrf']:.2f}  "
        f"({len(hyps)} sentences, beam {cfg.decode.beam_size}, alpha {cfg.decode.alpha}, {path})"
    )
    print(f"  {result['bleu_signature']}\n  {result['chrf_signature']}")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
