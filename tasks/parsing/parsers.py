"""The two parsers and the one place that picks between them by the recipe's `model.kind`.

Each parser (tasks/parsing/chart, tasks/parsing/seq2seq) fills the `Parser` protocol below;
they share the treebank, its vocabulary, trees and EVALB (tasks/parsing/*.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from nltk import Tree
from torch import Tensor, nn

from tasks.parsing.chart.task import ChartParsing
from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import Encoded, Vocab
from tasks.parsing.seq2seq.task import Seq2SeqParsing
from zoo.train import Term


class Parser(Protocol):
    name: str
    predicts_tags: bool  # part-of-speech tags worth scoring (and silver trees need)
    ensemble: type[nn.Module]  # the module that makes several trained parsers one (--ensemble)
    markers: int  # positions a sentence needs beyond its words (model.max_len counts them)

    def build_model(self, cfg: Any, vocab: Vocab) -> nn.Module: ...
    def rename_old_keys(self, weights: dict[str, Tensor]) -> dict[str, Tensor]: ...
    def lengths(self, examples: list[Encoded]) -> tuple[list[int], list[int]]: ...
    def collate(self, examples: list[Encoded], vocab: Vocab, word_ids: list[list[int]]) -> Any: ...
    def units(self, batch: Any) -> dict[str, int]: ...
    def loss(self, cfg: ParsingConfig, model: nn.Module, batch: Any) -> dict[str, Term]: ...
    def beam_size(self, cfg: ParsingConfig) -> int | None: ...
    def parse(
        self,
        model: nn.Module,
        vocab: Vocab,
        sentences: list[list[str]],
        cfg: ParsingConfig,
        *,
        beam_size: int,
        max_tokens: int,
        tags: list[list[str]] | None = None,
    ) -> list[Tree]: ...


PARSERS: dict[str, Parser] = {"chart": ChartParsing(), "seq2seq": Seq2SeqParsing()}


def parser_for(cfg: ParsingConfig) -> Parser:
    """The parser `cfg.model.kind` names (the config's check has refused any other kind)."""
    return PARSERS[cfg.model.kind]


def build_model(cfg: ParsingConfig, vocab: Vocab) -> nn.Module:
    """The recipe's parser, freshly initialised, sized for `vocab`."""
    return parser_for(cfg).build_model(cfg.model, vocab)
