"""The runner's demo as the shared verbs see it: reverse a sequence of symbols. The smallest
complete spec, and the template for a new task."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import torch

from tasks.reverse.config import ReverseConfig
from tasks.reverse.task import FIRST_SYMBOL, ReverseTask, make_pairs
from zoo.config import UserError
from zoo.data.special import SPECIAL_IDS
from zoo.decode.batched import decode_sorted
from zoo.decode.greedy import greedy_search
from zoo.plot import plot_cross_attention
from zoo.train import FitResult, Trained
from zoo.verbs import Evaluation, Loaded, TaskSpec, VerbOptions

# The held-out sets are drawn from seeds of their own, apart from every training stream.
SPLIT_SEEDS = {"valid": 10_000_019, "test": 20_000_033}


class ReverseSpec(TaskSpec):
    name = "reverse"
    description = "the runner's demo: a tiny encoder-decoder learns to reverse sequences"
    config = ReverseConfig

    def runner_task(self, cfg: ReverseConfig) -> ReverseTask:
        return ReverseTask(cfg)

    def after_training(self, cfg: ReverseConfig, task: ReverseTask, result: FitResult) -> None:
        print(
            f"held-out token accuracy {result.metrics['token_acc']:.4f}, "
            f"sequence accuracy {result.metrics['seq_acc']:.4f} after {result.step} steps "
            f"(run directory: {result.run_dir})\n"
            f'Next: echo "3 1 4 1 5" | python -m zoo predict reverse {result.run_dir}'
        )

    def load(self, trained: list[Trained], options: VerbOptions) -> Loaded:
        (run,) = trained
        model = run.load_into(ReverseTask(run.cfg).build_model()).to(torch.device(options.device))
        return Loaded(model, run, options.precision or run.cfg.train.precision)

    def _reverse(self, loaded: Loaded, sources: list[list[int]]) -> list[list[int]]:
        search = partial(greedy_search, loaded.model, special=SPECIAL_IDS)
        return decode_sorted(
            loaded.model, sources, lambda src, _: search(src), special=SPECIAL_IDS, max_tokens=4096
        )

    def evaluate(self, loaded: Loaded, options: VerbOptions) -> Evaluation:
        cfg = loaded.trained.cfg
        if options.split not in SPLIT_SEEDS:
            raise UserError(f"reverse: --split {options.split}: the held-out splits are valid and test")
        size = options.limit or cfg.data.valid_size
        generator = torch.Generator().manual_seed(cfg.train.seed + SPLIT_SEEDS[options.split])
        pairs = make_pairs(size, cfg, generator)
        sources = [pairs.src.row(i) for i in range(size)]
        outputs = self._reverse(loaded, sources)
        exact = sum(out == pairs.tgt.row(i) for i, out in enumerate(outputs))
        metrics = {"sequences": size, "exact": 100.0 * exact / size}
        summary = f"{options.split}: {metrics['exact']:.2f}% of {size} sequences reversed exactly (greedy)"
        return Evaluation(metrics, summary, [self._text(out) for out in outputs])

    def _symbols(self, line: str, number: int, cfg: ReverseConfig) -> list[int]:
        try:
            symbols = [int(word) for word in line.split()]
        except ValueError:
            raise UserError(f"input line {number}: not whole numbers: {line!r}") from None
        if not all(0 <= s < cfg.data.num_symbols for s in symbols) or not symbols:
            raise UserError(f"input line {number}: symbols are 0..{cfg.data.num_symbols - 1}, at least one")
        if len(symbols) >= cfg.model.max_len:
            raise UserError(f"input line {number}: {len(symbols)} symbols; the model takes fewer than "
                            f"{cfg.model.max_len}")  # fmt: skip
        return [FIRST_SYMBOL + s for s in symbols]

    def _text(self, ids: list[int]) -> str:
        return " ".join(str(i - FIRST_SYMBOL) for i in ids)

    def predict(self, loaded: Loaded, lines: list[str], options: VerbOptions) -> list[str]:
        cfg = loaded.trained.cfg
        sources = [self._symbols(line, n, cfg) for n, line in enumerate(lines, start=1)]
        return [self._text(ids) for ids in self._reverse(loaded, sources)]

    def attention(self, loaded: Loaded, lines: list[str], output: Path, options: VerbOptions) -> str:
        source = self._symbols(lines[0], 1, loaded.trained.cfg)
        hyp = self._reverse(loaded, [source])[0]
        device = next(loaded.model.parameters()).device
        src, tgt = source + [SPECIAL_IDS.eos], [SPECIAL_IDS.bos] + hyp
        names = [self._text([i]) if i >= FIRST_SYMBOL else "</s>" for i in src]
        outputs = [self._text([i]) if i >= FIRST_SYMBOL else "</s>" for i in hyp + [SPECIAL_IDS.eos]]
        plot_cross_attention(loaded.model, torch.tensor(src, device=device),
                             torch.tensor(tgt, device=device), names, outputs, output)  # fmt: skip
        return "the cross-attention of the first sequence (an anti-diagonal when it reverses)"

    def default_input(self, loaded: Loaded) -> list[str]:
        return [" ".join(str(s) for s in np.random.default_rng(0).integers(0, 10, 8))]
