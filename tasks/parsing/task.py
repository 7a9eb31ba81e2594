"""Constituency parsing as a runner Task, and the parsing that evaluation and the CLIs share.

The losses, batches and parsing of each parser are its own (tasks/parsing/chart/task.py,
tasks/parsing/seq2seq/task.py); this module picks one by the recipe (tasks.parsing.parsers).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import torch
from nltk import Tree
from torch import nn

from tasks.parsing.bert import load_pretrained
from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import (
    VOCAB_ARTIFACT,
    Encoded,
    Vocab,
    encode,
    frequent_words,
    load_treebank,
    read_extra_trees,
    replace_rare,
)
from tasks.parsing.evalb import EvalbResult, evalb
from tasks.parsing.parsers import build_model, parser_for
from tasks.parsing.pieces import BertSpec
from zoo.data.batching import shard, token_batches
from zoo.train import RunContext, Term


def too_long(words: list[str], cfg: ParsingConfig, vocab: Vocab) -> bool:
    """More words than the model's position table holds (with the markers, or the shortest tree),
    or more WordPieces than its BERT's."""
    extra = parser_for(cfg).markers
    pieces = vocab.pieces is not None and vocab.pieces.length(words) > vocab.pieces.max_len
    return pieces or len(words) + extra > cfg.model.max_len


def parse(
    model: nn.Module,
    vocab: Vocab,
    sentences: list[list[str]],
    cfg: ParsingConfig,
    *,
    beam_size: int | None = None,
    tags: list[list[str]] | None = None,
) -> list[Tree]:
    """Trees for tokenised sentences (run under zoo.train.evaluation). A sentence too long for
    the model is reported on stderr and comes back flat, under TOP: no brackets, so EVALB counts
    it as all missed (when its punctuation is tagged, by `tags`, as in the gold tree).

    Args:
        beam_size: seq2seq beam (default: decode.beam_size).
        tags: the tags of the leaves the parser does not tag (the seq2seq parser's, and those of
            unparsed sentences); XX when None.
    """
    keep = [k for k, s in enumerate(sentences) if s and not too_long(s, cfg, vocab)]
    kept = set(keep)
    for k, s in enumerate(sentences):
        if k not in kept:
            print(
                f"sentence {k + 1}: {len(s)} words, more than model.max_len={cfg.model.max_len} "
                "(or the BERT's positions) allows, or none: left unparsed",
                file=sys.stderr,
            )
    trees = [
        Tree("TOP", [Tree(tags[k][i] if tags else "XX", [w]) for i, w in enumerate(s)])
        for k, s in enumerate(sentences)
    ]
    chosen = [sentences[k] for k in keep]
    max_tokens = cfg.decode.max_tokens or cfg.data.max_tokens
    if chosen:
        parsed = parser_for(cfg).parse(
            model,
            vocab,
            chosen,
            cfg,
            beam_size=beam_size or cfg.decode.beam_size,
            max_tokens=max_tokens,
            tags=[tags[k] for k in keep] if tags else None,
        )
        for k, tree in zip(keep, parsed):
            trees[k] = tree
    return trees


def score_trees(
    model: nn.Module, vocab: Vocab, gold: list[Tree], cfg: ParsingConfig, *, beam_size: int | None = None
) -> tuple[EvalbResult, list[Tree]]:
    """EVALB of the model's parses of gold trees' sentences, and the parses (seq2seq: with the
    gold tags, so its tagging accuracy means nothing: leave it out with metrics(tags=False))."""
    sentences = [t.leaves() for t in gold]
    tags = [[tag for _, tag in t.pos()] for t in gold]
    predicted = parse(model, vocab, sentences, cfg, beam_size=beam_size, tags=tags)
    return evalb(gold, predicted), predicted


class ParsingTask:
    """The runner's Task for either parser (`model.kind`).

    Args:
        cfg: the recipe.
        treebank: {train, dev, test} trees when the caller has them (tests); else cfg.data's.
    """

    unit_name = "words"

    def __init__(self, cfg: ParsingConfig, treebank: dict[str, list[Tree]] | None = None) -> None:
        self.cfg, self.treebank = cfg, treebank
        self.parser = parser_for(cfg)

    def setup(self, run: RunContext) -> None:
        self.run = run
        self.treebank = self.treebank or load_treebank(self.cfg.data)
        limit = self.cfg.data.max_train_words
        train = [t for t in self.treebank["train"] if not limit or len(t.leaves()) <= limit]
        # The parser reads the last layer alone: a bare encoder checkpoint (BertModel) will do.
        self.bert = load_pretrained(self.cfg.model) if self.cfg.model.pretrained else None
        # The vocabulary is the treebank's alone unless data.extra_vocab_min_count says otherwise,
        # so parsers trained with and without extra trees share it and parse as one ensemble.
        spec = BertSpec.of(self.bert) if self.bert else None
        self.vocab = Vocab.build(train, spec)
        extra = [
            t
            for t in read_extra_trees(self.cfg.data.extra_train, self.vocab)
            if not limit or len(t.leaves()) <= limit
        ]
        if self.cfg.data.extra_vocab_min_count:
            self.vocab = Vocab.build(train, spec, frequent_words(extra, self.cfg.data.extra_vocab_min_count))
        gold = self._fitting([encode(t, self.vocab) for t in train], "training trees")
        # Rare words are counted in the treebank before upsampling, which would make none rare.
        counts = torch.bincount(
            torch.tensor([w for ex in gold for w in ex.word_ids]), minlength=len(self.vocab.words)
        )
        self.rare = set((counts == 1).nonzero().squeeze(1).tolist())
        self.examples: list[Encoded] = gold * self.cfg.data.upsample_primary + self._fitting(
            [encode(t, self.vocab) for t in extra], "data.extra_train trees"
        )
        if extra:
            print(
                f"training trees: {len(gold):,} of the treebank x {self.cfg.data.upsample_primary} + "
                f"{len(self.examples) - len(gold) * self.cfg.data.upsample_primary:,} of data.extra_train",
                file=sys.stderr,
            )

    def _fitting(self, examples: list[Encoded], what: str) -> list[Encoded]:
        """The examples the model can read, the others dropped and counted."""
        fits = [
            max(n, m) <= self.cfg.model.max_len and not too_long(ex.words, self.cfg, self.vocab)
            for ex, n, m in zip(examples, *self._lengths(examples))
        ]
        if not all(fits):
            print(
                f"dropped {fits.count(False)} {what} longer than model.max_len={self.cfg.model.max_len} "
                "(with markers or as tree symbols) or than the BERT's positions",
                file=sys.stderr,
            )
        return [ex for ex, fit in zip(examples, fits) if fit]

    def artifacts(self) -> dict[str, bytes]:
        return {VOCAB_ARTIFACT: self.vocab.to_json()}

    def build_model(self) -> nn.Module:
        model = build_model(self.cfg, self.vocab)
        if self.bert is not None:  # the pretrained weights; everything else starts fresh
            reader = bert_of(model)
            reader.embeddings.load_state_dict(self.bert.model.embeddings.state_dict())
            reader.encoder.load_state_dict(self.bert.model.encoder.state_dict())
        return model

    def _lengths(self, examples: list[Encoded]) -> tuple[list[int], list[int]]:
        return self.parser.lengths(examples)

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[Any]:
        batches = token_batches(
            *self._lengths(self.examples), self.cfg.data.max_tokens, seed=self.cfg.train.seed, epoch=epoch
        )
        mine = shard(batches, self.run.rank, self.run.world_size)
        for indices in mine[start:]:
            examples = [self.examples[i] for i in indices]
            word_ids = replace_rare(
                examples,
                indices.tolist(),
                self.rare,
                self.cfg.data.unk_prob,
                seed=self.cfg.train.seed,
                epoch=epoch,
            )
            yield self.parser.collate(examples, self.vocab, word_ids)

    def units(self, batch: Any) -> dict[str, int]:
        return self.parser.units(batch)

    def train_step(self, model: nn.Module, batch: Any) -> dict[str, Term]:
        return self.parser.loss(self.cfg, model, batch)

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """EVALB on the dev split (seq2seq: with decode.eval_beam_size)."""
        result, _ = score_trees(
            model, self.vocab, self.treebank["dev"], self.cfg, beam_size=self.cfg.decode.eval_beam_size
        )
        return result.metrics(tags=self.parser.predicts_tags)


def bert_of(model: nn.Module) -> nn.Module:
    """The BertReader inside either parser: the chart parser's `bert`, or the seq2seq parser's
    source embedding's."""
    return model.bert if hasattr(model, "bert") else model.src_embed.bert
