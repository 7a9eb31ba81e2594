"""The paper's encoder-decoder Transformer, assembled from zoo.blocks.

Shape key: B batch, S source length, T target length, D model dim, V target vocabulary size.

`build_model` is the only place where the config turns into modules; `Transformer` just wires
the parts together and exposes the three calls that training (`forward`) and the decoders in
zoo.decode (`encode`, `decode`, `new_cache`) need.

A source that is more than token ids (word pieces for a pretrained reader, characters, source
features) has one way in: build the Transformer with your own `src_embed`, a module whose
`forward(src, source)` returns (B, S, D), and pass the task's `source` object (anything: a
dataclass of tensors) to `forward(..., source=)` and `encode(src, source)`. The ids `src` still
give the padding mask. The decoders in zoo.decode call `encode(src)` alone, so a search binds the
batch's source with `zoo.decode.BoundInputs(model, source)`. Parts of a custom source embedding
may train at their own learning rate through its `lr_scales()` (see `Transformer.lr_scales`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from zoo.blocks import (
    Decoder,
    DecoderCache,
    Encoder,
    LayerSpec,
    SequenceEmbedding,
    TokenEmbedding,
    init_transformer_,
    padding_mask,
)
from zoo.config import UserError
from zoo.models.checks import check_model_values
from zoo.models.recurrent_seq2seq import RecurrentSeq2Seq, build_recurrent_seq2seq, check_arch_values
from zoo.models.seq2seq import Seq2Seq, output_projection


@dataclass
class ModelConfig:
    encoder_layers: int = field(default=6, metadata={"help": "encoder layers (the paper's N)"})
    decoder_layers: int = field(default=6, metadata={"help": "decoder layers"})
    dim: int = field(default=512, metadata={"help": "model width d_model"})
    ffn_dim: int = field(default=2048, metadata={"help": "feed-forward hidden width d_ff"})
    num_heads: int = field(default=8, metadata={"help": "attention heads h"})
    dropout: float = field(default=0.1, metadata={"help": "residual and embedding dropout (P_drop)"})
    attn_dropout: float = field(default=0.0, metadata={"help": "dropout on attention weights"})
    ffn_dropout: float = field(default=0.0, metadata={"help": "dropout inside the feed-forward"})
    activation: str = field(default="relu", metadata={"help": "feed-forward activation: relu | gelu"})
    norm: str = field(default="layer", metadata={"help": "normalisation: layer | rms"})
    pre_norm: bool = field(default=False, metadata={"help": "pre-norm residuals (the paper: post-norm)"})
    positions: str = field(
        default="sinusoidal", metadata={"help": "position encodings: sinusoidal | learned"}
    )
    position_scale: float = field(
        default=1.0,
        metadata={
            "help": "multiplier on the sinusoidal encodings (root mean square 0.71 at 1; the token "
            "embeddings' is 1): how much positional signal the model is handed (Table 3 row E's check)"
        },
    )
    max_len: int = field(
        default=1024,
        metadata={
            "help": "longest source or target sequence (position table size; decoding stops before it)"
        },
    )
    share_embeddings: bool = field(
        default=True,
        metadata={
            "help": "one matrix for source and target embeddings and the output projection (the paper; "
            "needs one joint vocabulary, so equal source and target sizes)"
        },
    )
    window: int | None = field(
        default=None,
        metadata={
            "help": "restricted self-attention: each position sees +-window positions (None = full attention)"
        },
    )
    attention_score: str = field(
        default="scaled_dot",
        metadata={
            "help": "every attention's score: scaled_dot (the paper, q.k / sqrt(d_k)) | dot (unscaled) | "
            "additive (Bahdanau et al.: w . tanh(q + k), written out, slower and larger)"
        },
    )
    key_dim: int | None = field(
        default=None,
        metadata={
            "help": "per-head width d_k of queries and keys (the paper's Table 3 row B); values keep "
            "dim / num_heads (None = dim / num_heads)"
        },
    )
    arch: str = field(
        default="transformer",
        metadata={
            "help": "transformer | rnn: the recurrent baseline with additive attention "
            "(zoo.models.recurrent_seq2seq), which reads dim (embeddings), rnn_dim, cell, the layer "
            "counts, dropout, attn_dropout, max_len and share_embeddings"
        },
    )
    cell: str = field(default="gru", metadata={"help": "arch rnn: the recurrent cell, gru | lstm | rnn"})
    rnn_dim: int = field(
        default=512,
        metadata={"help": "arch rnn: the decoder state's width (the encoder's: half per direction)"},
    )

    def check(self) -> None:
        check_model_values(self)
        check_arch_values(self)


class Transformer(Seq2Seq):
    """Encoder-decoder Transformer: source ids (B, S) and target input ids (B, T) -> logits (B, T, V).

    Targets are right-padded (the decoder's causal mask then keeps real positions off padding);
    source padding is hidden from the encoder and from cross-attention by a padding mask.

    Args:
        src_embed: source tokens -> (B, S, D) embeddings with positions; or a task's own module
            whose forward takes (src, source) (see the module docstring).
        tgt_embed: target tokens -> (B, T, D); may share its TokenEmbedding with `src_embed`.
        encoder: the encoder stack.
        decoder: the decoder stack.
        output: the pre-softmax projection D -> V (its weight may be tied to the embeddings).
        pad_idx: padding id of the source vocabulary.
        max_len: positions the embeddings cover; decoders stop before the target runs past it.
    """

    def encode(self, src: Tensor, source: Any = None) -> tuple[Tensor, Tensor]:
        """src (B, S) -> memory (B, S, D) and memory_mask (B, 1, 1, S), True at real tokens.

        Args:
            source: what a custom `src_embed` reads besides the ids, rows as in `src`
                (None for the built-in embedding, which reads the ids alone).
        """
        memory_mask = padding_mask(src, self.pad_idx)
        x = self.src_embed(src) if source is None else self.src_embed(src, source)
        return self.encoder(x, pad_mask=memory_mask), memory_mask

    def lr_scales(self) -> dict[str, float]:
        """zoo.train.optim's per-part learning-rate multipliers: those a custom source embedding
        gives its parts (a pretrained reader fine-tuned slower), keyed by parameter-name prefix."""
        scales = getattr(self.src_embed, "lr_scales", dict)()
        return {f"src_embed.{prefix}": scale for prefix, scale in scales.items()}

    def decoder_states(
        self, tgt_in: Tensor, memory: Tensor | None, memory_mask: Tensor, cache: DecoderCache | None = None
    ) -> Tensor:
        """tgt_in (B, T) -> the decoder's output (B, T, D), before the output projection."""
        offset = cache.offset if cache is not None else 0
        return self.decoder(self.tgt_embed(tgt_in, offset), memory, memory_mask=memory_mask, cache=cache)

    def new_cache(self, beams: int = 1) -> DecoderCache:
        """An empty KV cache for incremental decoding.

        Args:
            beams: rows per source the search keeps (beam search's k): their self-attention
                histories then share one buffer (restricted attention keeps per-row caches).
        """
        if beams == 1 or self.decoder.window is not None:
            return self.decoder.new_cache()
        return DecoderCache.empty(len(self.decoder.layers), beams=beams)


def sequence_embedding(
    cfg: ModelConfig, vocab_size: int, pad_idx: int, tokens: TokenEmbedding | None
) -> SequenceEmbedding:
    """One side's input layer as `cfg` describes it; `tokens` shares another side's table."""
    return SequenceEmbedding(
        vocab_size,
        cfg.dim,
        max_len=cfg.max_len,
        padding_idx=pad_idx,
        positions=cfg.positions,
        position_scale=cfg.position_scale,
        dropout=cfg.dropout,
        token_embedding=tokens,
    )


def layer_spec(cfg: ModelConfig) -> LayerSpec:
    """The encoder's and decoder's layer shape as `cfg` describes it."""
    return LayerSpec(
        cfg.dim,
        cfg.num_heads,
        cfg.ffn_dim,
        dropout=cfg.dropout,
        attn_dropout=cfg.attn_dropout,
        ffn_dropout=cfg.ffn_dropout,
        activation=cfg.activation,
        norm=cfg.norm,
        pre_norm=cfg.pre_norm,
        window=cfg.window,
        attention_score=cfg.attention_score,
        key_dim=cfg.key_dim,
    )


def build_model(
    cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int, pad_idx: int
) -> Transformer | RecurrentSeq2Seq:
    """The Transformer described by `cfg`, freshly initialised as in the paper (tensor2tensor);
    with `arch: rnn`, the recurrent baseline (zoo.models.recurrent_seq2seq) instead.

    Linear layers are Xavier-uniform; embeddings (and an untied output projection) are
    N(0, D^-1/2), so the sqrt(D)-scaled embeddings start with unit variance.

    Args:
        cfg: the model section of the recipe.
        src_vocab_size: source vocabulary size.
        tgt_vocab_size: target vocabulary size V (the output projection's width); with
            `share_embeddings` both sizes name one joint vocabulary and must be equal.
        pad_idx: padding id of both vocabularies (its embedding rows are zero and get no gradient).
    """
    if cfg.share_embeddings and src_vocab_size != tgt_vocab_size:
        raise UserError(
            f"model.share_embeddings=true needs one joint vocabulary, but the source "
            f"has {src_vocab_size} ids and the target {tgt_vocab_size}; set "
            f"model.share_embeddings=false"
        )
    if cfg.arch == "rnn":
        return build_recurrent_seq2seq(cfg, src_vocab_size, tgt_vocab_size, pad_idx)

    spec = layer_spec(cfg)
    src_embed = sequence_embedding(cfg, src_vocab_size, pad_idx, None)
    tgt_embed = sequence_embedding(
        cfg, tgt_vocab_size, pad_idx, src_embed.tokens if cfg.share_embeddings else None
    )
    encoder = Encoder.uniform(cfg.encoder_layers, spec)
    decoder = Decoder.uniform(cfg.decoder_layers, spec)
    # Only the stacks: over the whole model the Xavier rule would also hit the tied output
    # projection and with it the embeddings, which keep TokenEmbedding's N(0, D^-1/2).
    init_transformer_(encoder)
    init_transformer_(decoder)
    output = output_projection(cfg.dim, tgt_vocab_size, tgt_embed.tokens if cfg.share_embeddings else None)
    return Transformer(src_embed, tgt_embed, encoder, decoder, output, pad_idx=pad_idx, max_len=cfg.max_len)
