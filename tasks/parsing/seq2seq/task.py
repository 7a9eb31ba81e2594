"""The seq2seq parser as tasks.parsing.parsers sees it: its model, batches, loss (label-smoothed
cross-entropy per tree symbol, as the paper trains translation) and parsing (constrained greedy
or beam search: every prefix stays a tree over the sentence's words).

It predicts XX for every word, so for EVALB (which deletes punctuation by each tree's own tags)
its leaves get the gold tags when they are known; EVALB does not score tags.
"""

from __future__ import annotations

from nltk import Tree
from torch import Tensor, nn

from tasks.parsing.config import ParsingConfig
from tasks.parsing.data import Encoded, Vocab
from tasks.parsing.linearize import allowed_next, delinearize
from tasks.parsing.seq2seq.batches import ParserBatch, collate, piece_source
from tasks.parsing.seq2seq.model import build_model, rename_old_keys
from zoo.data.special import SPECIAL_IDS
from zoo.decode import BoundInputs, beam_search, decode_sorted, greedy_search
from zoo.decode.state import max_lengths
from zoo.models.seq2seq_ensemble import Seq2SeqEnsemble
from zoo.train import Term


def parse_seq2seq(
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
        source = piece_source([sentences[i] for i in positions.tolist()], vocab)
        bound = model if source is None else BoundInputs(model, source.to(src.device))
        if beam_size == 1:
            return greedy_search(bound, src, **options)
        patience = d.patience or None
        return beam_search(bound, src, beam_size=beam_size, alpha=d.alpha, patience=patience, **options)

    outputs = decode_sorted(
        model, [vocab.word_ids(s) for s in sentences], search, special=SPECIAL_IDS, max_tokens=max_tokens
    )
    return [
        delinearize([vocab.symbols[i] for i in out], words, tags[k] if tags else None)
        for k, (out, words) in enumerate(zip(outputs, sentences))
    ]


class Seq2SeqParsing:
    """The seq2seq parser's part of the parsing task (tasks.parsing.parsers.Parser)."""

    name = "seq2seq"
    predicts_tags = False
    ensemble = Seq2SeqEnsemble  # one search over the members' mean next-symbol probabilities
    markers = 3  # a sentence of n words makes a tree of at least n + 3 symbols: '(X', ')X', EOS
    build_model = staticmethod(build_model)
    collate = staticmethod(collate)
    rename_old_keys = staticmethod(rename_old_keys)
    parse = staticmethod(parse_seq2seq)

    def lengths(self, examples: list[Encoded]) -> tuple[list[int], list[int]]:
        return [len(ex.words) + 1 for ex in examples], [len(ex.symbol_ids) + 1 for ex in examples]

    def units(self, batch: ParserBatch) -> dict[str, int]:
        return {"loss": batch.pairs.tgt_tokens, "words": batch.words}

    def loss(self, cfg: ParsingConfig, model: nn.Module, batch: ParserBatch) -> dict[str, Term]:
        p = batch.pairs
        sums = model(p.src, p.tgt_in, p.tgt_out, smoothing=cfg.label_smoothing, source=batch.source)
        return {"loss": Term(sums.loss, {"nll": sums.nll})}

    def beam_size(self, cfg: ParsingConfig) -> int | None:
        return cfg.decode.beam_size
