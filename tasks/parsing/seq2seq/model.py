"""The seq2seq parser (the paper's linearized trees): zoo's encoder-decoder, reading words and
writing tree symbols, with two options that are not in the paper: a pretrained BERT reading
the words (a custom source embedding, zoo.models.encoder_decoder's one way in for a source
that is more than ids) and a word pointer (`PointerTransformer`). `build_model` is the only
place its config turns into modules.

Shape key: B sentences, S = n + 1 source positions (words + EOS), P pieces, D model dim,
N decoder rows (g per sentence), T target positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from tasks.parsing.bert import BertReader, bert_reader
from tasks.parsing.data import Vocab
from tasks.parsing.linearize import WORD
from tasks.parsing.seq2seq.config import Seq2SeqModelConfig
from zoo.blocks import SequenceEmbedding
from zoo.blocks.cache import DecoderCache
from zoo.data.special import SPECIAL_IDS
from zoo.models.encoder_decoder import Transformer
from zoo.models.encoder_decoder import build_model as build_transformer


@dataclass
class PieceSource:
    """A BERT's input for a batch of sources: pieces (B, P) and the piece each source position
    (the words, then EOS) reads, first (B, S) (tasks.parsing.pieces; EOS reads [SEP])."""

    pieces: Tensor
    first: Tensor

    def to(self, device: torch.device) -> PieceSource:
        return PieceSource(self.pieces.to(device), self.first.to(device))


class ReadingEmbedding(nn.Module):
    """The source embedding of a parser that reads a BERT too: the words' embeddings (with
    positions) plus the BERT's last layer at each word's first piece, projected (as the chart
    parser reads it). src (B, S), source -> (B, S, D)."""

    def __init__(self, words: SequenceEmbedding, bert: BertReader) -> None:
        super().__init__()
        self.words, self.bert = words, bert

    def forward(self, src: Tensor, source: PieceSource | None = None) -> Tensor:
        if source is None:
            raise ValueError(
                "this parser reads a BERT: give the sentences' pieces (tasks.parsing.seq2seq.batches)"
            )
        return self.words(src) + self.bert(source.pieces, source.first)

    def lr_scales(self) -> dict[str, float]:
        return {f"bert.{prefix}": scale for prefix, scale in self.bert.lr_scales().items()}


class PointerCache:
    """A decoder KV cache plus what the word pointer needs between steps: the source states
    (the first call's memory, B sources), each source's EOS position, and each row's count of
    words attached so far (N rows, g consecutive rows per source)."""

    def __init__(self, inner: DecoderCache) -> None:
        self.inner = inner
        self.words: Tensor | None = None
        self.last: Tensor | None = None
        self.counts: Tensor | None = None

    def reorder(self, index: Tensor) -> None:
        self.inner.reorder(index)
        self.counts = self.counts.index_select(0, index)

    def select_sources(self, index: Tensor) -> None:
        self.inner.select_sources(index)
        self.words, self.last = self.words.index_select(0, index), self.last.index_select(0, index)


class PointerTransformer(Transformer):
    """zoo's encoder-decoder with a word pointer (`model.word_pointer`; not in the paper).

    With `XX` for every word, the next word to attach is the number of `XX` emitted so far, a
    count that 3,098 training trees do not teach cross-attention (the plain model's parses
    ignore the sentence). Here every decoder input also gets the encoder's state of that next
    word (the EOS state once all are attached), projected: the buffer front of a shift-reduce
    parser. It is a function of the prefix, so teacher forcing, cached decoding and constrained
    beam search see the same.
    """

    def __init__(self, base: Transformer, *, word_id: int) -> None:
        super().__init__(
            base.src_embed,
            base.tgt_embed,
            base.encoder,
            base.decoder,
            base.output,
            pad_idx=base.pad_idx,
            max_len=base.max_len,
        )
        self.word_id = word_id
        dim = base.output.weight.shape[1]
        self.pointer = nn.Linear(dim, dim)

    def new_cache(self, beams: int = 1) -> PointerCache:
        return PointerCache(super().new_cache(beams))

    def decoder_states(
        self, tgt_in: Tensor, memory: Tensor | None, memory_mask: Tensor, cache: PointerCache | None = None
    ) -> Tensor:
        attached = (tgt_in == self.word_id).cumsum(dim=1)  # (N, T) words attached up to each input
        if cache is None:
            words, last, inner, offset = memory, memory_mask.flatten(1).sum(-1) - 1, None, 0
        else:
            if memory is not None:  # the first call: keep the sources for the later steps
                cache.words, cache.last = memory, memory_mask.flatten(1).sum(-1) - 1
                cache.counts = attached.new_zeros(len(tgt_in))
            attached = attached + cache.counts[:, None]
            cache.counts = attached[:, -1]
            words, last, inner, offset = cache.words, cache.last, cache.inner, cache.inner.offset
        source = torch.arange(len(tgt_in), device=tgt_in.device) // (len(tgt_in) // len(words))
        position = torch.minimum(attached, last[source, None])
        x = self.tgt_embed(tgt_in, offset) + self.pointer(words[source[:, None], position])
        return self.decoder(x, memory, memory_mask=memory_mask, cache=inner)


def build_model(cfg: Seq2SeqModelConfig, vocab: Vocab) -> Transformer:
    """A seq2seq parser, freshly initialised, sized for `vocab`: zoo's encoder-decoder from
    words to tree symbols, reading a BERT too and with a word pointer when `cfg` asks."""
    model = build_transformer(cfg, len(vocab.words), len(vocab.symbols), SPECIAL_IDS.pad)
    bert = bert_reader(vocab.bert_spec, cfg.dim, cfg.pretrained_lr_scale)
    if bert is not None:
        model.src_embed = ReadingEmbedding(model.src_embed, bert)
    return PointerTransformer(model, word_id=vocab.symbol_index[WORD]) if cfg.word_pointer else model


def rename_old_keys(weights: dict[str, Tensor]) -> dict[str, Tensor]:
    """Weights saved before the BERT became a source embedding (`bert.*` beside `src_embed.*`)
    under today's names (`src_embed.bert.*`, `src_embed.words.*`); others as they are."""
    if not any(key.startswith("bert.") for key in weights):
        return weights
    renamed = {}
    for key, value in weights.items():
        if key.startswith(("bert.", "src_embed.")):
            key = "src_embed." + (
                "words." + key[len("src_embed.") :] if key.startswith("src_embed.") else key
            )
        renamed[key] = value
    return renamed
