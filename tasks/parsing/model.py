"""The two parsers' networks: the chart parser (Kitaev & Klein, 2018) and the paper's
encoder-decoder from zoo.models. `build_model` is the only place the config turns into modules.

The chart parser reads BOS w_1 .. w_n EOS (word embeddings plus a character CNN, plus
positions) with a zoo.blocks Encoder. As in Kitaev & Klein, each output vector is split in a
forward and a backward half; fencepost k (between words k and k+1) takes the forward half of
position k and the backward half of position k+1, and span (i, j) is represented by the
differences [f_j - f_i ; b_i - b_j]. A two-layer MLP scores every non-empty label of every span;
the empty label scores 0. Part-of-speech tags come from a linear classifier on each word's
output, not from the span classifier (as in Kitaev et al., 2019).

Factored (`model.partitioned`, K&K's section 3.1): words, characters and BERT make a content
vector of D/2, positions the other D/2, and the encoder keeps them apart
(zoo.blocks.partitioned); its output is then interleaved as benepar does, so that the forward
and backward halves each read content and position features.

With a pretrained BERT (`model.pretrained`), its last layer at each word's first WordPiece,
projected to D, is added to the word's input, and the BERT is fine-tuned with the parser (Kitaev
et al., 2019, keep the self-attentive layers above it as well). The seq2seq parser may read one
the same way, into its encoder (`Seq2SeqParser`).

Shape key: B sentences, T = n + 2 input positions, n words, D model dim, L labels, K tags.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from tasks.parsing.config import KINDS, ModelConfig
from tasks.parsing.data import Vocab
from tasks.parsing.linearize import WORD
from zoo.blocks import (
    ConcatPositions,
    Encoder,
    LayerSpec,
    SequenceEmbedding,
    TokenEmbedding,
    init_transformer_,
    padding_mask,
    partition_,
)
from zoo.blocks.cache import DecoderCache
from zoo.config import UserError
from zoo.data.special import SPECIAL_IDS
from zoo.models.bert import Bert, build_bert
from zoo.models.encoder_decoder import ModelConfig as TransformerConfig
from zoo.models.encoder_decoder import Transformer
from zoo.models.encoder_decoder import build_model as build_transformer


class CharCNN(nn.Module):
    """chars (B, T, C) -> (B, T, D): character embeddings, a width-3 convolution, max over the word."""

    def __init__(self, num_chars: int, char_dim: int, dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(num_chars, char_dim, padding_idx=SPECIAL_IDS.pad)
        self.conv = nn.Conv1d(char_dim, dim, kernel_size=3, padding=1)

    def forward(self, chars: Tensor) -> Tensor:
        b, t, c = chars.shape
        x = self.conv(self.embed(chars.view(b * t, c)).transpose(1, 2))  # (B*T, D, C)
        x = x.masked_fill((chars.view(b * t, 1, c) == SPECIAL_IDS.pad), float("-inf"))
        return x.max(dim=-1).values.nan_to_num(neginf=0.0).view(b, t, -1)


class BertReader(nn.Module):
    """pieces (B, P), first (B, T) -> (B, T, D): a BERT's last layer at the given pieces,
    projected. Holds the BERT's embeddings and encoder only (its heads have nothing to learn here)."""

    def __init__(self, bert: Bert, dim: int, *, lr_scale: float = 1.0) -> None:
        super().__init__()
        self.embeddings, self.encoder, self.pad_id = bert.embeddings, bert.encoder, bert.pad_id
        self.project = nn.Linear(bert.embeddings.tokens.weight.shape[1], dim)
        self.lr_scale = lr_scale  # of the pretrained weights, not of the new projection

    def forward(self, pieces: Tensor, first: Tensor) -> Tensor:
        x = self.embeddings(pieces, torch.zeros_like(pieces))
        h = self.encoder(x, pad_mask=(pieces != self.pad_id)[:, None, None, :])
        return self.project(h.gather(1, first[..., None].expand(-1, -1, h.shape[-1])))


class _ReadsBert:
    """A parser whose optional `bert` (BertReader) may train at its own learning rate."""

    bert: BertReader | None

    def lr_scales(self) -> dict[str, float]:
        """zoo.train.optim's per-part learning-rate multipliers: the pretrained BERT's, if any."""
        if self.bert is None or self.bert.lr_scale == 1.0:
            return {}
        return {"bert.embeddings.": self.bert.lr_scale, "bert.encoder.": self.bert.lr_scale}


class ChartParser(_ReadsBert, nn.Module):
    """Span label scores (B, n+1, n+1, L) with label 0 = empty fixed at 0, and tag logits (B, n, K).

    Args:
        embed: word ids -> (B, T, D) with positions, or (B, T, D/2) content when factored.
        chars: a CharCNN or None. encoder: the self-attentive encoder.
        label_mlp: (.., D) span -> (.., L - 1). tagger: (.., D) word -> (.., K).
        bert: a BertReader or None. positions: ConcatPositions for a factored encoder, or None.
    """

    def __init__(
        self,
        embed: SequenceEmbedding | TokenEmbedding,
        chars: CharCNN | None,
        encoder: Encoder,
        label_mlp: nn.Module,
        tagger: nn.Linear,
        *,
        max_len: int,
        bert: BertReader | None = None,
        positions: ConcatPositions | None = None,
    ) -> None:
        super().__init__()
        self.embed, self.chars, self.encoder = embed, chars, encoder
        self.label_mlp, self.tagger = label_mlp, tagger
        self.max_len = max_len
        self.bert = bert
        self.positions = positions

    def forward(
        self, words: Tensor, chars: Tensor, pieces: Tensor | None = None, first: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        x = self.embed(words)
        if self.chars is not None:
            x = x + self.chars(chars)
        if self.bert is not None:
            if pieces is None or first is None:
                raise ValueError(
                    "this parser reads a BERT: give the sentences' pieces (ChartInput.model_inputs)"
                )
            x = x + self.bert(pieces, first)
        if self.positions is not None:
            x = self.positions(x)
        h = self.encoder(x, pad_mask=padding_mask(words, SPECIAL_IDS.pad))
        if self.positions is not None:  # [content ; position] -> halves that each read both
            h = torch.cat([h[..., 0::2], h[..., 1::2]], dim=-1)
        half = h.shape[-1] // 2
        forward, backward = h[:, :-1, :half], h[:, 1:, half:]  # fenceposts 0..n: (B, n+1, D/2)
        spans = torch.cat(
            [
                forward[:, None, :, :] - forward[:, :, None, :],
                backward[:, :, None, :] - backward[:, None, :, :],
            ],
            dim=-1,
        )  # [i, j]
        labels = self.label_mlp(spans)
        scores = torch.cat([labels.new_zeros(*labels.shape[:-1], 1), labels], dim=-1)
        return scores, self.tagger(h[:, 1:-1])


class ChartEnsemble(nn.Module):
    """Chart parsers trained on one treebank vocabulary, read as one (fairseq's `--path a:b`):
    the members' span scores are averaged, so CKY finds the tree with the best mean score, and
    so are their tag log-probabilities. Same inputs and outputs as a ChartParser."""

    def __init__(self, members: list[ChartParser]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)

    def forward(self, *inputs: Tensor | None) -> tuple[Tensor, Tensor]:
        scores, tags = zip(*(member(*inputs) for member in self.members))
        return torch.stack(scores).mean(0), torch.stack([t.log_softmax(-1) for t in tags]).mean(0)


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


class Seq2SeqParser(_ReadsBert, Transformer):
    """The paper's encoder-decoder with a word pointer, a pretrained BERT reading the words, or
    both (`model.word_pointer`, `model.pretrained`; neither is in the paper).

    Word pointer: with `XX` for every word, the next word to attach is the number of `XX` emitted
    so far, a count that 3,098 training trees do not teach cross-attention (the plain model's
    parses ignore the sentence). Here every decoder input also gets the encoder's state of that
    next word (the EOS state once all are attached), projected: the buffer front of a shift-reduce
    parser. It is a function of the prefix, so teacher forcing, cached decoding and constrained
    beam search see the same.

    BERT: as in the chart parser, its last layer at each word's first piece (at [SEP] for EOS),
    projected, is added to the word's embedding before the encoder, and it is fine-tuned with the
    parser. `encode` then takes the pieces too (zoo.decode.BoundInputs binds them for a search).
    """

    def __init__(self, base: Transformer, *, word_id: int | None, bert: BertReader | None = None) -> None:
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
        self.pointer = nn.Linear(dim, dim) if word_id is not None else None
        self.bert = bert

    def encode(
        self, src: Tensor, pieces: Tensor | None = None, first: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """src (B, S) word ids + EOS; with a BERT, pieces (B, P) and first (B, S), the piece each
        source position reads (tasks.parsing.data.seq2seq_pieces)."""
        if self.bert is None:
            return super().encode(src)
        if pieces is None or first is None:
            raise ValueError(
                "this parser reads a BERT: give the sentences' pieces (tasks.parsing.data.seq2seq_pieces)"
            )
        memory_mask = padding_mask(src, self.pad_idx)
        x = self.src_embed(src) + self.bert(pieces, first)
        return self.encoder(x, pad_mask=memory_mask), memory_mask

    def new_cache(self, beams: int = 1) -> PointerCache | DecoderCache:
        inner = super().new_cache(beams)
        return inner if self.pointer is None else PointerCache(inner)

    def decoder_states(
        self, tgt_in: Tensor, memory: Tensor | None, memory_mask: Tensor, cache: PointerCache | None = None
    ) -> Tensor:
        if self.pointer is None:
            return super().decoder_states(tgt_in, memory, memory_mask, cache)
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


def build_model(cfg: ModelConfig, vocab: Vocab) -> ChartParser | Transformer:
    """The parser `cfg.kind` names, freshly initialised, sized for `vocab`."""
    if cfg.kind not in KINDS:
        raise UserError(f"model.kind: unknown {cfg.kind!r}; expected one of {KINDS}")
    if cfg.kind == "seq2seq":
        transformer = TransformerConfig(
            encoder_layers=cfg.encoder_layers,
            decoder_layers=cfg.decoder_layers,
            dim=cfg.dim,
            ffn_dim=cfg.ffn_dim,
            num_heads=cfg.num_heads,
            dropout=cfg.dropout,
            attn_dropout=cfg.attn_dropout,
            pre_norm=cfg.pre_norm,
            positions=cfg.positions,
            max_len=cfg.max_len,
            share_embeddings=False,
        )  # words in, tree symbols out
        model = build_transformer(transformer, len(vocab.words), len(vocab.symbols), SPECIAL_IDS.pad)
        bert = bert_reader(vocab, cfg.dim, cfg.pretrained_lr_scale)
        if not cfg.word_pointer and bert is None:
            return model
        return Seq2SeqParser(model, word_id=vocab.symbol_index[WORD] if cfg.word_pointer else None, bert=bert)
    spec = LayerSpec(
        cfg.dim,
        cfg.num_heads,
        cfg.ffn_dim,
        dropout=cfg.dropout,
        attn_dropout=cfg.attn_dropout,
        pre_norm=cfg.pre_norm,
    )
    content = cfg.dim // 2 if cfg.partitioned else cfg.dim
    if cfg.partitioned:
        embed = TokenEmbedding(len(vocab.words), content, padding_idx=SPECIAL_IDS.pad)
    else:
        embed = SequenceEmbedding(
            len(vocab.words),
            cfg.dim,
            max_len=cfg.max_len,
            padding_idx=SPECIAL_IDS.pad,
            positions=cfg.positions,
            dropout=cfg.dropout,
        )
    chars = CharCNN(len(vocab.chars), cfg.char_dim, content) if cfg.char_dim else None
    encoder = init_transformer_(Encoder.uniform(cfg.encoder_layers, spec))
    positions = None
    if cfg.partitioned:
        partition_(encoder)
        positions = ConcatPositions(cfg.max_len, cfg.dim, positions=cfg.positions, dropout=cfg.dropout)
    label_mlp = nn.Sequential(
        nn.Linear(cfg.dim, cfg.label_hidden),
        nn.LayerNorm(cfg.label_hidden),
        nn.ReLU(),
        nn.Linear(cfg.label_hidden, len(vocab.labels) - 1),
    )
    return ChartParser(
        embed,
        chars,
        encoder,
        label_mlp,
        nn.Linear(cfg.dim, len(vocab.tags)),
        max_len=cfg.max_len,
        bert=bert_reader(vocab, content, cfg.pretrained_lr_scale),
        positions=positions,
    )


def bert_reader(vocab: Vocab, dim: int, lr_scale: float = 1.0) -> BertReader | None:
    """A freshly initialised reader for the BERT the vocabulary names (its weights are loaded
    from the pretrained model or the parser's checkpoint), or None."""
    spec = vocab.bert_spec
    if spec is None:
        return None
    return BertReader(build_bert(spec.config, spec.vocab_size, spec.pad_id), dim, lr_scale=lr_scale)
