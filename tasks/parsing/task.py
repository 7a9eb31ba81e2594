"""Constituency parsing as a runner Task, and the parsing that evaluation and the CLIs share.

Chart parser loss (Kitaev & Klein, 2018): the hinge max(0, max_T [s(T) + cost(T)] - s(T*)),
where cost is the Hamming loss (one per span whose label differs from the gold label of that
span, "" for spans that are no gold constituent). The maximising tree is found by CKY on the
span scores plus the cost (loss-augmented decoding), summed per sentence; its units are
sentences. Its tagger adds a cross-entropy per word. Seq2seq parser loss: label-smoothed
cross-entropy per tree symbol, as the paper trains translation.

Trees for scoring: the chart parser's own predicted tags; the seq2seq parser predicts XX for
every word, so for EVALB (which deletes punctuation by each tree's own tags) its leaves get the
gold tags; EVALB does not score tags, so this only decides which words are punctuation.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import torch
from nltk import Tree
from torch import Tensor, nn
from torch.nn import functional as F

from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import (
    VOCAB_ARTIFACT,
    ChartBatch,
    Encoded,
    Seq2SeqBatch,
    Vocab,
    chart_input,
    collate,
    encode,
    load_treebank,
    read_extra_trees,
    replace_rare,
    seq2seq_pieces,
)
from tasks.parsing.evalb import EvalbResult, evalb
from tasks.parsing.linearize import allowed_next, delinearize
from tasks.parsing.model import build_model
from tasks.parsing.pieces import BertSpec
from tasks.parsing.spans import spans_tree
from zoo.convert.hf_bert import load_hf_bert
from zoo.data.batching import shard, token_batches
from zoo.data.special import SPECIAL_IDS
from zoo.decode import BoundInputs, beam_search, decode_sorted, greedy_search
from zoo.decode.cky import cky, span_sum
from zoo.decode.state import max_lengths
from zoo.train import RunContext, Term


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


def too_long(words: list[str], cfg: ParsingConfig, vocab: Vocab) -> bool:
    """More words than the model's position table holds (with the markers, or the shortest tree),
    or more WordPieces than its BERT's."""
    extra = 2 if cfg.model.kind == "chart" else 3  # BOS/EOS; or '(X' + ')X' + EOS on the target side
    pieces = vocab.pieces is not None and vocab.pieces.length(words) > vocab.pieces.max_len
    return pieces or len(words) + extra > cfg.model.max_len


def chart_parse(model: nn.Module, vocab: Vocab, sentences: list[list[str]], max_tokens: int) -> list[Tree]:
    device = next(model.parameters()).device
    lengths = [len(s) + 2 for s in sentences]
    trees: list[Tree] = [None] * len(sentences)  # type: ignore[list-item]  # all filled below
    for indices in token_batches(lengths, lengths, max(max_tokens, max(lengths)), shuffle=False):
        batch = [sentences[i] for i in indices]
        x = chart_input(batch, vocab)
        scores, tag_logits = model(*x.model_inputs(device))
        result = cky(forbid_empty_root(scores.float(), x.lengths.to(device)), x.lengths)
        for i, words, spans, tags in zip(
            indices.tolist(), batch, result.spans, tag_logits.argmax(-1).tolist()
        ):
            labelled = [(s, e, vocab.labels[label]) for s, e, label in spans]
            trees[i] = spans_tree(labelled, words, [vocab.tags[t] for t in tags[: len(words)]])
    return trees


def seq2seq_parse(
    model: nn.Module,
    vocab: Vocab,
    sentences: list[list[str]],
    cfg: ParsingConfig,
    *,
    beam_size: int,
    max_tokens: int,
    tags: list[list[str]] | None = None,
) -> list[Tree]:
    d, symbols = cfg.decode, vocab.bracket_symbols()

    def search(src: Tensor, positions: Tensor):
        words = (src != SPECIAL_IDS.pad).sum(dim=1) - 1  # without the EOS
        limits = max_lengths(src, SPECIAL_IDS.pad, d.max_len_a, d.max_len_b, cap=model.max_len - 1)

        def allowed(rows: Tensor, prefixes: Tensor) -> Tensor:
            return allowed_next(prefixes, words[rows], limits[rows], symbols)

        options = dict(
            special=SPECIAL_IDS, max_len_a=d.max_len_a, max_len_b=d.max_len_b, allowed_tokens=allowed
        )
        inputs = seq2seq_pieces([sentences[i] for i in positions.tolist()], vocab)
        bound = BoundInputs(model, *(x.to(src.device) for x in inputs)) if inputs else model
        if beam_size == 1:
            return greedy_search(bound, src, **options)
        return beam_search(bound, src, beam_size=beam_size, alpha=d.alpha, **options)

    outputs = decode_sorted(
        model, [vocab.word_ids(s) for s in sentences], search, special=SPECIAL_IDS, max_tokens=max_tokens
    )
    return [
        delinearize([vocab.symbols[i] for i in out], words, tags[k] if tags else None)
        for k, (out, words) in enumerate(zip(outputs, sentences))
    ]


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
    if chosen and cfg.model.kind == "chart":
        parsed = chart_parse(model, vocab, chosen, max_tokens)
    elif chosen:
        parsed = seq2seq_parse(
            model,
            vocab,
            chosen,
            cfg,
            beam_size=beam_size or cfg.decode.beam_size,
            max_tokens=max_tokens,
            tags=[tags[k] for k in keep] if tags else None,
        )
    for k, tree in zip(keep, parsed if chosen else []):
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
    """The runner's Task for both parser kinds.

    Args:
        cfg: the recipe.
        treebank: {train, dev, test} trees when the caller has them (tests); else cfg.data's.
    """

    unit_name = "words"

    def __init__(self, cfg: ParsingConfig, treebank: dict[str, list[Tree]] | None = None) -> None:
        self.cfg, self.treebank = cfg, treebank

    def setup(self, run: RunContext) -> None:
        self.run = run
        self.treebank = self.treebank or load_treebank(self.cfg.data)
        limit = self.cfg.data.max_train_words
        train = [t for t in self.treebank["train"] if not limit or len(t.leaves()) <= limit]
        # The parser reads the last layer alone: a bare encoder checkpoint (BertModel) will do.
        self.bert = (
            load_hf_bert(self.cfg.model.pretrained, encoder_only=True) if self.cfg.model.pretrained else None
        )
        # The vocabulary is the treebank's alone, so parsers trained with and without extra trees
        # share it and parse as one ensemble.
        self.vocab = Vocab.build(train, BertSpec.of(self.bert) if self.bert else None)
        gold = self._fitting([encode(t, self.vocab) for t in train], "training trees")
        # Rare words are counted in the treebank before upsampling, which would make none rare.
        counts = torch.bincount(
            torch.tensor([w for ex in gold for w in ex.word_ids]), minlength=len(self.vocab.words)
        )
        self.rare = set((counts == 1).nonzero().squeeze(1).tolist())
        extra = [
            t
            for t in read_extra_trees(self.cfg.data.extra_train, self.vocab)
            if not limit or len(t.leaves()) <= limit
        ]
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
        model = build_model(self.cfg.model, self.vocab)
        if self.bert is not None:  # the pretrained weights; everything else starts fresh
            model.bert.embeddings.load_state_dict(self.bert.model.embeddings.state_dict())
            model.bert.encoder.load_state_dict(self.bert.model.encoder.state_dict())
        return model

    def _lengths(self, examples: list[Encoded]) -> tuple[list[int], list[int]]:
        words = [len(ex.words) + (2 if self.cfg.model.kind == "chart" else 1) for ex in examples]
        targets = words if self.cfg.model.kind == "chart" else [len(ex.symbol_ids) + 1 for ex in examples]
        return words, targets

    def train_batches(self, epoch: int, *, start: int = 0) -> Iterator[ChartBatch | Seq2SeqBatch]:
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
            yield collate(self.cfg.model.kind, examples, self.vocab, word_ids)

    def units(self, batch: ChartBatch | Seq2SeqBatch) -> dict[str, int]:
        if isinstance(batch, ChartBatch):
            words = int(batch.input.lengths.sum())
            return {"span": len(batch.spans), "tag": words, "words": words}
        return {"loss": int((batch.tgt_out != SPECIAL_IDS.pad).sum()), "words": batch.words}

    def train_step(self, model: nn.Module, batch: ChartBatch | Seq2SeqBatch) -> dict[str, Term]:
        if isinstance(batch, Seq2SeqBatch):
            sums = model(
                batch.src,
                batch.tgt_in,
                batch.tgt_out,
                smoothing=self.cfg.label_smoothing,
                encoder_inputs=batch.encoder_inputs,
            )
            return {"loss": Term(sums.loss, {"nll": sums.nll})}
        scores, tag_logits = model(*batch.input.model_inputs())
        lengths = batch.input.lengths
        tag = F.cross_entropy(tag_logits.float().flatten(0, 1), batch.tags.flatten(), reduction="sum")
        correct = ((tag_logits.argmax(-1) == batch.tags) & (batch.tags >= 0)).sum()
        span = hinge_loss(scores.float(), batch.spans, lengths)
        return {"span": Term(span), "tag": Term(self.cfg.tag_weight * tag, {"acc": correct})}

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """EVALB on the dev split (seq2seq: with decode.eval_beam_size)."""
        result, _ = score_trees(
            model, self.vocab, self.treebank["dev"], self.cfg, beam_size=self.cfg.decode.eval_beam_size
        )
        return result.metrics(tags=self.cfg.model.kind == "chart")
