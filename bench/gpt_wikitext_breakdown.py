"""Where a GPT run's loss on WikiText goes: the NLL of the detokenized split, scored as
`evaluate` scores it (same window and stride), divided among the tokens of `<unk>` (WikiText's
rare words), of title and heading lines (` = Title = `, ` = = History = = `) and of the rest of
the text; with each part's cost per token and the per-word perplexity the text would have if that
part cost nothing, which bounds what fixing it alone can buy.

    python -m bench.gpt_wikitext_breakdown RUN [--split test] [--data_dir DIR] [--wikitext wikitext-2]
        [--threads 2] [--out bench/results]

Writes gpt_wikitext_breakdown_<run name>_<split>.{json,md} into --out (runs/bench unless told).
A token belongs to a part when its characters overlap that part's text (a token that joins
`<unk>` to the next word counts as `<unk>`'s).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import torch

from bench.output import add_out_option
from bench.tables import PCT, Column, markdown
from bench.timing import cpu_model
from tasks.gpt.config import GPTConfig
from tasks.gpt.perplexity import token_nll, wikitext_text, wikitext_words
from tasks.gpt.spec import GPTOptions, GPTSpec
from zoo.cli import main_guard
from zoo.data.paths import resolve_data_dir
from zoo.train import load_trained

UNK = re.compile(re.escape("<unk>"))
HEADING = re.compile(r"^ *=.*= *$", re.MULTILINE)  # WikiText titles and headings, detokenized or not
PARTS = ("<unk>", "headings", "rest")
COLUMNS = [
    Column("part", "part"),
    Column("tokens", "tokens", "{:,}"),
    Column("share of tokens", "token_share", "{:.1%}"),
    Column("NLL (nats)", "nll", "{:,.0f}"),
    Column("share of NLL", "nll_share", "{:.1%}"),
    Column("nats per token", "nats_per_token", PCT),
    Column("word ppl if it cost nothing", "word_ppl_without", "{:,.1f}"),
]


def spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


def overlaps(sorted_spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether [start, end) overlaps one of the sorted, disjoint `sorted_spans`."""
    i = bisect.bisect_right(sorted_spans, (start, math.inf)) - 1
    return any(
        0 <= j < len(sorted_spans) and sorted_spans[j][0] < end and start < sorted_spans[j][1]
        for j in (i, i + 1)
    )


def part_of_tokens(text: str, offsets: list[tuple[int, int]]) -> list[str]:
    """Each token's part (PARTS) from its character offsets in `text`."""
    unk, headings = spans(UNK, text), spans(HEADING, text)
    return [
        "<unk>" if overlaps(unk, s, e) else "headings" if overlaps(headings, s, e) else "rest"
        for s, e in offsets
    ]


def breakdown(nll: torch.Tensor, parts: list[str], words: int) -> list[dict[str, Any]]:
    """Per part: tokens, NLL, shares, nats per token, and the per-word perplexity without its NLL;
    then the whole ("all"). `nll` and `parts` are per scored token."""
    total, count = float(nll.sum()), len(parts)
    rows = []
    for part in PARTS:
        mask = torch.tensor([p == part for p in parts])
        part_nll, tokens = float(nll[mask].sum()), int(mask.sum())
        rows.append(
            {
                "part": part,
                "tokens": tokens,
                "token_share": tokens / count,
                "nll": part_nll,
                "nll_share": part_nll / total,
                "nats_per_token": part_nll / tokens if tokens else None,
                "word_ppl_without": math.exp((total - part_nll) / words),
            }
        )
    rows.append({"part": "all", "tokens": count, "token_share": 1.0, "nll": total, "nll_share": 1.0,
                 "nats_per_token": total / count, "word_ppl_without": None})  # fmt: skip
    return rows


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", help="a GPT run directory (its best checkpoint is scored)")
    parser.add_argument("--split", default="test", choices=["valid", "test"])
    parser.add_argument("--data_dir", default="", help="data directory ('' = the run's, or $ZOO_DATA_DIR)")
    parser.add_argument("--wikitext", default="wikitext-2", help="folder of WikiText valid.txt/test.txt")
    parser.add_argument("--threads", type=int, default=2)
    add_out_option(parser)
    return parser.parse_args(argv)


@main_guard
def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = arguments(list(sys.argv[1:] if argv is None else argv))
    torch.set_num_threads(args.threads)
    trained = load_trained(args.run, GPTConfig)
    loaded = GPTSpec().load([trained], GPTOptions(run=args.run))
    loaded.model.eval()
    recipe = trained.cfg
    path = resolve_data_dir(args.data_dir or recipe.data.data_dir) / args.wikitext / f"{args.split}.txt"
    text, words = wikitext_text(path), wikitext_words(path)
    encoding = loaded.tokenizer.tokenizer.encode(text)
    ids = torch.tensor([loaded.tokenizer.eot_id, *encoding.ids])
    stride = recipe.eval.stride or recipe.data.context // 2
    nll = token_nll(
        loaded.model, ids, context=recipe.data.context, stride=stride, batch_size=recipe.data.eval_batch_size
    )[1:]
    rows = breakdown(nll, part_of_tokens(text, encoding.offsets), words)
    name = f"gpt_wikitext_breakdown_{Path(args.run).name}_{args.split}"
    record = {
        "command": "python -m bench.gpt_wikitext_breakdown " + " ".join(argv or sys.argv[1:]),
        "run": args.run,
        "set": f"{args.wikitext} {args.split} (detokenized)",
        "context": recipe.data.context,
        "stride": stride,
        "words": words,
        "word_ppl": math.exp(float(nll.sum()) / words),
        "unk_below": recipe.data.unk_below,
        "hardware": {"cpu": cpu_model(), "torch": torch.__version__},
        "parts": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        f"# Where `{args.run}`'s loss on {record['set']} goes",
        "",
        f"`{record['command']}`; fp32, window {record['context']}, stride {stride}: perplexity "
        f"{record['word_ppl']:,.2f} per word over {words:,} words (the WikiText count); the run's "
        f"data.unk_below: {record['unk_below']}.",
        "",
        *markdown(rows, COLUMNS),
        "",
    ]
    (args.out / f"{name}.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return record


if __name__ == "__main__":
    main()
