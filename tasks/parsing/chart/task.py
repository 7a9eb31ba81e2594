"""The chart parser as tasks.parsing.parsers sees it: its model, batches, loss and parsing.

Loss (Kitaev & Klein, 2018): the hinge max(0, max_T [s(T) + cost(T)] - s(T*)), where cost is the
Hamming loss (one per span whose label differs from the gold label of that span, "" for spans
that are no gold constituent). The maximising tree is found by CKY on the span scores plus the
cost (loss-augmented decoding), summed per sentence; its units are sentences. Its tagger adds a
cross-entropy per word. Parsing: CKY on the span scores, tags from the tagger.
"""

from __future__ import annotations

import torch
from nltk import Tree
from torch import Tensor, nn
from torch.nn import functional as F

from tasks.parsing.chart.batches import ChartBatch, chart_input, collate
from tasks.parsing.chart.model import ChartEnsemble, build_model
from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import Encoded, Vocab
from tasks.parsing.spans import spans_tree
from zoo.data.batching import token_batches
from zoo.decode.cky import cky, span_sum
from zoo.train import Term


def forbid_empty_root(scores: Tensor, lengths: Tensor) -> Tensor:
    """The whole sentence must be a constituent: the empty label of span (0, n) scores -inf."""
    root = torch.zeros_like(scores, dtype=torch.bool)
    root[torch.arange(len(lengths)), 0, lengths, 0] = True
    return scores.masked_fill(root, float("-inf"))


def hinge_loss(scores: Tensor, gold: list[list[tuple[int, int, int]]], lengths: Tensor) -> Tensor:
    """Summed over sentences: max(0, best loss-augmented tree score - gold tree score)."""
    labels = torch.zeros(scores.shape[:-1], dtype=torch.long, device=scores.device)
    for b, spans in enumerate(gold):
        for i, j, label in spans:
            labels[b, i, j] = label
    cost = torch.ones_like(scores).scatter_(-1, labels[..., None], 0.0)
    predicted = cky(forbid_empty_root(scores + cost, lengths), lengths)
    return F.relu(predicted.scores - span_sum(scores, gold)).sum()


def parse_chart(
    model: nn.Module,
    vocab: Vocab,
    sentences: list[list[str]],
    cfg: ParsingConfig,
    *,
    beam_size: int,
    max_tokens: int,
    tags: list[list[str]] | None = None,
) -> list[Tree]:
    """Trees with the parser's own tags (`beam_size` and `tags` are the seq2seq parser's)."""
    device = next(model.parameters()).device
    lengths = [len(s) + 2 for s in sentences]
    trees: list[Tree] = [None] * len(sentences)  # type: ignore[list-item]  # all filled below
    for indices in token_batches(lengths, lengths, max(max_tokens, max(lengths)), shuffle=False):
        batch = [sentences[i] for i in indices]
        x = chart_input(batch, vocab)
        scores, tag_logits = model(*x.model_inputs(device))
        result = cky(forbid_empty_root(scores.float(), x.lengths.to(device)), x.lengths)
        for i, words, spans, predicted in zip(
            indices.tolist(), batch, result.spans, tag_logits.argmax(-1).tolist()
        ):
            labelled = [(s, e, vocab.labels[label]) for s, e, label in spans]
            trees[i] = spans_tree(labelled, words, [vocab.tags[t] for t in predicted[: len(words)]])
    return trees


class ChartParsing:
    """The chart parser's part of the parsing task (tasks.parsing.parsers.Parser)."""

    name = "chart"
    predicts_tags = True
    ensemble = ChartEnsemble
    markers = 2  # BOS and EOS around the words
    build_model = staticmethod(build_model)
    collate = staticmethod(collate)
    parse = staticmethod(parse_chart)

    @staticmethod
    def rename_old_keys(weights: dict[str, Tensor]) -> dict[str, Tensor]:
        return weights  # its names never changed

    def lengths(self, examples: list[Encoded]) -> tuple[list[int], list[int]]:
        words = [len(ex.words) + 2 for ex in examples]
        return words, words

    def units(self, batch: ChartBatch) -> dict[str, int]:
        words = int(batch.input.lengths.sum())
        return {"span": len(batch.spans), "tag": words, "words": words}

    def loss(self, cfg: ParsingConfig, model: nn.Module, batch: ChartBatch) -> dict[str, Term]:
        scores, tag_logits = model(*batch.input.model_inputs())
        tag = F.cross_entropy(tag_logits.float().flatten(0, 1), batch.tags.flatten(), reduction="sum")
        correct = ((tag_logits.argmax(-1) == batch.tags) & (batch.tags >= 0)).sum()
        span = hinge_loss(scores.float(), batch.spans, batch.input.lengths)
        return {"span": Term(span), "tag": Term(cfg.tag_weight * tag, {"acc": correct})}

    def beam_size(self, cfg: ParsingConfig) -> int | None:
        return None  # no search: CKY is exact
