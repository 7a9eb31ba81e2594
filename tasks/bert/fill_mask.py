"""echo "TEXT with [MASK]" | python -m tasks.bert.fill_mask RUN [--top_k=5] [--json]

For each line of standard input, the top-k fillers of each [MASK] with their probabilities, as
the transformers `fill-mask` pipeline gives them (score, token, token_str, sequence). RUN is a
run directory, a checkpoint file or a Hugging Face BERT directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import torch

from tasks.bert.hf import LoadedBert, load_bert
from zoo.cli import main_guard
from zoo.config import UserError, parse_cli
from zoo.data.text import stdin_lines
from zoo.train import evaluation
from zoo.train.options import CheckpointOptions


@dataclass
class FillMaskConfig(CheckpointOptions):
    top_k: int = field(default=5, metadata={"help": "fillers per [MASK]"})
    json: bool = field(
        default=False, metadata={"help": "print one JSON list per line (the pipeline's records)"}
    )


def fill_mask(loaded: LoadedBert, text: str, top_k: int = 5) -> list[list[dict]]:
    """Per [MASK] of `text`, its `top_k` fillers: {score, token, token_str, sequence}, where
    sequence is the text with that [MASK] filled (the others left as they are)."""
    tokenizer, model = loaded.tokenizer, loaded.model
    ids = [tokenizer.cls_id, *tokenizer.encode(text), tokenizer.sep_id]
    if len(ids) > model.max_len:
        raise UserError(f"line of {len(ids)} tokens exceeds the model's {model.max_len}: {text[:60]!r}")
    input_ids = torch.tensor([ids], device=next(model.parameters()).device)
    masked = input_ids == tokenizer.mask_id
    if not masked.any():
        raise UserError(f"no [MASK] in {text[:60]!r}")
    with evaluation(model):
        probabilities = model(input_ids, masked_positions=masked).mlm.float().softmax(dim=-1)
    results = []
    for position, probs in zip(masked[0].nonzero()[:, 0].tolist(), probabilities):
        scores, tokens = probs.topk(min(top_k, len(probs)))
        fillers = []
        for score, token in zip(scores.tolist(), tokens.tolist()):
            filled = list(ids)
            filled[position] = token
            fillers.append(
                {
                    "score": score,
                    "token": token,
                    "token_str": tokenizer.convert_ids_to_tokens([token])[0],
                    "sequence": tokenizer.decode(filled),
                }
            )  # specials skipped
        results.append(fillers)
    return results


@main_guard
def main(argv: list[str] | None = None) -> None:
    args = parse_cli(
        FillMaskConfig, argv, default_config=None, positional=("run",), description=__doc__.split("\n\n")[1]
    )
    loaded = load_bert(args.run, which=args.checkpoint)
    for number, text in enumerate(stdin_lines(), 1):  # a line that is not UTF-8 is named
        if not text:
            continue
        try:
            results = fill_mask(loaded, text, args.top_k)
        except UserError as err:
            raise UserError(f"stdin:{number}: {err}") from None
        if args.json:
            print(json.dumps(results[0] if len(results) == 1 else results))
            continue
        print(text)
        for number, fillers in enumerate(results, 1):
            if len(results) > 1:
                print(f"  [MASK] {number}:")
            for f in fillers:
                print(f"  {f['score']:.4f}  {f['token_str']:<15} {f['sequence']}")


if __name__ == "__main__":
    main()
